import Proto

/// A reply already in its protobuf wire encoding, for replies that carry large `bytes`.
///
/// Encoding a `GetImageResponse` through protobuf-c copies its data twice (into the arena, then
/// into the packed buffer) before the socket copies it again; writing the two fields directly
/// copies the bytes once. Clients decode it as the message it encodes.
struct EncodedReply<Message: ProtoMessage>: ProtoMessage {
    static var protoName: String { Message.protoName }

    let bytes: [UInt8]

    init() { bytes = [] }

    init(serializedBytes bytes: [UInt8], options: DecodingOptions) throws(ProtoDecodingError) {
        self.bytes = bytes
    }

    func serializedBytes() -> [UInt8] { bytes }

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
        let total = head.count + data.count
        bytes = [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            let base = UnsafeMutableRawPointer(buffer.baseAddress!)
            head.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: head.count) }
            data.withUnsafeBytes { source in
                if source.count > 0 { (base + head.count).copyMemory(from: source.baseAddress!, byteCount: source.count) }
            }
            count = total
        }
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
