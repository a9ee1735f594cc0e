/// A protobuf message of proto/, encoded and decoded by protobuf-c.
public protocol ProtoMessage: Sendable, Hashable {
    /// The proto full name, e.g. "homepwner.v1.Item".
    static var protoName: String { get }
    /// An all-default message.
    init()
    /// The protobuf wire encoding.
    func serializedBytes() -> [UInt8]
    /// Decodes wire bytes, refusing what is over the limits or does not parse.
    init(serializedBytes bytes: [UInt8], options: DecodingOptions) throws(ProtoDecodingError)
    /// Writes the wire encoding into memory the caller provides: `allocate` is called once with
    /// the exact size and returns where to write it (a large message about to be sent, say), or
    /// nil to have the encoding returned as bytes instead (nil is returned when written).
    func serialize(into allocate: (Int) -> UnsafeMutableRawBufferPointer?) -> [UInt8]?
    /// Decodes wire bytes read in place (a received frame), under the same rules.
    init(serializedBuffer buffer: UnsafeRawBufferPointer, options: DecodingOptions) throws(ProtoDecodingError)
    /// Decodes `buffer` but leaves out the top-level `bytes` field numbered `field` when its
    /// value is large (at least 64 KiB): that field stays empty and where its bytes lie in
    /// `buffer` is returned instead, for a caller that can use them in place.
    static func decode(
        _ buffer: UnsafeRawBufferPointer, options: DecodingOptions, leavingLargeBytesField field: UInt32
    ) throws(ProtoDecodingError) -> (message: Self, field: Range<Int>?)
}

extension ProtoMessage {
    /// Encodes, then copies the encoding into place (the generated messages pack in place).
    public func serialize(into allocate: (Int) -> UnsafeMutableRawBufferPointer?) -> [UInt8]? {
        let bytes = serializedBytes()
        guard let target = allocate(bytes.count) else { return bytes }
        precondition(target.count == bytes.count, "serialize(into:) was given \(target.count) bytes for \(bytes.count)")
        if !bytes.isEmpty { bytes.withUnsafeBytes { target.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) } }
        return nil
    }

    /// Decodes everything (the generated messages leave the field in place).
    public static func decode(
        _ buffer: UnsafeRawBufferPointer, options: DecodingOptions, leavingLargeBytesField field: UInt32
    ) throws(ProtoDecodingError) -> (message: Self, field: Range<Int>?) {
        (try Self(serializedBuffer: buffer, options: options), nil)
    }

    /// Copies the buffer and decodes the copy (the generated messages decode in place).
    public init(serializedBuffer buffer: UnsafeRawBufferPointer, options: DecodingOptions) throws(ProtoDecodingError) {
        try self.init(serializedBytes: [UInt8](buffer), options: options)
    }

    /// Decodes wire bytes under the default limits.
    public init(serializedBytes bytes: [UInt8]) throws(ProtoDecodingError) {
        try self.init(serializedBytes: bytes, options: .default)
    }
}

/// A protobuf enum: an open set of Int32 values with named constants.
public protocol ProtoEnum: RawRepresentable<Int32>, Hashable, Sendable, CustomStringConvertible {
    /// The proto full name, e.g. "homepwner.v1.ImageKind".
    static var protoName: String { get }
    /// Every value declared in the .proto file.
    static var allCases: [Self] { get }
    /// Proto value names ("ORIGINAL") by wire value.
    static var protoValueNames: [Int32: String] { get }
    /// The zero value.
    init()
}

extension ProtoEnum {
    /// The proto value name, or nil for a value this build does not know.
    public var protoValueName: String? { Self.protoValueNames[rawValue] }

    /// The value with this proto name ("ORIGINAL"), if declared.
    public init?(protoValueName name: String) {
        guard let entry = Self.protoValueNames.first(where: { $0.value == name }) else { return nil }
        self.init(rawValue: entry.key)!
    }

    public var description: String { protoValueName ?? String(rawValue) }
}
