import Proto
import ZMQ

extension ProtoMessage {
    /// Decodes a received frame where it lies (an array for a small frame, the message's own
    /// buffer for a large one).
    package init(frame: Frame, options: DecodingOptions) throws(ProtoDecodingError) {
        if let bytes = frame.storedBytes {
            try self.init(serializedBytes: bytes, options: options)
        } else {
            self = try frame.withUnsafeBytes { buffer throws(ProtoDecodingError) in
                try Self(serializedBuffer: buffer, options: options)
            }
        }
    }
}

/// The last frame of a request or reply: small ones as bytes, large ones encoded straight
/// into a ZeroMQ frame, which is then sent without another copy.
public struct MessageBody: Sendable, Equatable {
    enum Storage: Sendable {
        case bytes([UInt8])
        case frame(Frame)
    }

    let storage: Storage

    /// Bodies at least this large are encoded into a frame.
    static let frameThreshold = 64 * 1024

    /// An empty body (every non-OK reply).
    public static let empty = MessageBody(storage: .bytes([]))

    /// Bytes already encoded.
    public init(bytes: [UInt8]) { storage = .bytes(bytes) }

    /// An encoding already written into the frame it is sent in (a reply filled while its
    /// data was read from disk): sent without a copy.
    public init(frame: Frame) { storage = .frame(frame) }

    init(storage: Storage) { self.storage = storage }

    /// The encoding of `message`, written once into where it will be sent from (a frame for a
    /// large body, an array for a small one).
    public init(encoding message: some ProtoMessage) {
        var frame: Frame?
        let bytes = message.serialize { size in
            guard size >= Self.frameThreshold else { return nil }
            let made = Frame(uninitializedCount: size)
            frame = made
            return made.unsafeMutableBytes
        }
        storage = frame.map { .frame($0) } ?? .bytes(bytes ?? [])
    }

    /// The size in bytes.
    public var count: Int {
        switch storage {
        case .bytes(let bytes): bytes.count
        case .frame(let frame): frame.count
        }
    }

    /// Same bytes, however stored.
    public static func == (a: MessageBody, b: MessageBody) -> Bool { a.count == b.count && a.bytes == b.bytes }

    /// A copy of the bytes.
    public var bytes: [UInt8] {
        switch storage {
        case .bytes(let bytes): bytes
        case .frame(let frame): frame.bytes
        }
    }
}

/// Bytes inside a received frame (a photo in a request body), used where they lie.
public struct FrameBytes: Sendable {
    let frame: Frame
    let range: Range<Int>

    public init(frame: Frame, range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= frame.count, "range \(range) outside a \(frame.count)-byte frame")
        self.frame = frame
        self.range = range
    }

    /// Bytes decoded already (a large field that came small, or not in place), as the same type.
    public init(_ bytes: [UInt8]) {
        self.init(frame: Frame(bytes), range: 0..<bytes.count)
    }

    public var count: Int { range.count }

    public var isEmpty: Bool { range.isEmpty }

    /// Reads the bytes in place; the pointer is valid only inside `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let range = range
        return try frame.withUnsafeBytes { buffer throws(E) -> R in try body(UnsafeRawBufferPointer(rebasing: buffer[range])) }
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] { withUnsafeBytes { [UInt8]($0) } }
}
