import Proto
import ZMQ

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
        head = Self.head(message: message, dataCount: data.count)
        self.data = data
    }

    /// What precedes `dataCount` bytes of data in the encoding: field 1 (`message`) and the
    /// tag and length of field 2 (none when there is no data).
    static func head(message: [UInt8], dataCount: Int) -> [UInt8] {
        var head = protoFieldHeader(number: 1, length: message.count) + message
        if dataCount > 0 { head += protoFieldHeader(number: 2, length: dataCount) }
        return head
    }
}

/// A reply frame whose data is read straight into it: the encoded head (see
/// `EncodedReply.head`) is written first, the blob's bytes after it, and the frame is sent as
/// it is.
struct FramedRead: ReadTarget {
    let frame: Frame
    let headCount: Int

    /// A frame of `head` followed by room for `dataCount` bytes.
    init(head: [UInt8], dataCount: Int) {
        frame = Frame(uninitializedCount: head.count + dataCount)
        headCount = head.count
        let target = frame.unsafeMutableBytes
        head.withUnsafeBytes { target.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    }

    var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: frame.unsafeMutableBytes[headCount...]) }
}
