import Proto

/// A reply already in its protobuf wire encoding, for replies that carry large `bytes`.
///
/// Encoding a `GetImageResponse` through protobuf-c copies its data twice (into the arena, then
/// into the packed buffer); this writes the two fields directly into the reply's frame, so the
/// data is copied once between the cache and the socket. Clients decode it as the message it
/// encodes.
struct EncodedReply<Message: ProtoMessage>: ProtoMessage {
    static var protoName: String { Message.protoName }

    /// Everything before the data: field 1 and the tag and length of field 2.
    let head: [UInt8]
    let data: [UInt8]

    init() {
        head = []
        data = []
    }

    init(serializedBytes bytes: [UInt8], options: DecodingOptions) throws(ProtoDecodingError) {
        head = bytes
        data = []
    }

    func serializedBytes() -> [UInt8] { head + data }

    /// Head and data written once into the caller's memory (the reply's frame).
    func serialize(into allocate: (Int) -> UnsafeMutableRawBufferPointer?) -> [UInt8]? {
        guard let target = allocate(head.count + data.count) else { return head + data }
        let base = target.baseAddress
        head.withUnsafeBytes { if $0.count > 0 { base!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        data.withUnsafeBytes { if $0.count > 0 { (base! + head.count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        return nil
    }

    /// `field` (a message, already encoded) as field 1 and `data` as field 2, both length-delimited:
    /// the shape of GetImageResponse and GetRenditionResponse.
    init(message: [UInt8], data: [UInt8]) {
        var head: [UInt8] = [0x0A]
        Self.appendVarint(UInt64(message.count), to: &head)
        head += message
        if !data.isEmpty {
            head.append(0x12)
            Self.appendVarint(UInt64(data.count), to: &head)
        }
        self.head = head
        self.data = data
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
