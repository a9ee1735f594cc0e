import Proto

/// A reply already in its protobuf wire encoding, for replies that carry large `bytes`.
///
/// A `GetImageResponse` would already copy its data once into the reply's frame (large `bytes`
/// are spliced into protobuf-c's output), but its `data` is an array: a range of a cached blob
/// would first be copied into one, and its `ImageInfo` encoded on every call. This takes the
/// range as a slice and the info already encoded (kept with the cache entry). Clients decode it
/// as the message it encodes; a test holds its bytes equal to protobuf-c's.
struct EncodedReply<Message: ProtoMessage>: ProtoMessage {
    static var protoName: String { Message.protoName }

    /// Everything before the data: field 1 and the tag and length of field 2.
    let head: [UInt8]
    let data: ArraySlice<UInt8>

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
        self.init(message: message, data: data[...])
    }

    /// The same with a part of an array (a range of a cached blob), copied only into the frame.
    init(message: [UInt8], data: ArraySlice<UInt8>) {
        var head = protoFieldHeader(number: 1, length: message.count) + message
        if !data.isEmpty { head += protoFieldHeader(number: 2, length: data.count) }
        self.head = head
        self.data = data
    }
}
