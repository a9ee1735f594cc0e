import Proto
import ZMQ

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

    init(storage: Storage) { self.storage = storage }

    /// The encoding of `message`, written once into where it will be sent from (a frame for a
    /// large body; a small one is copied into an array).
    public init(encoding message: some ProtoMessage) {
        var scratch: UnsafeMutableRawBufferPointer?
        var frame: Frame?
        message.serialize { size in
            if size >= Self.frameThreshold {
                let made = Frame(uninitializedCount: size)
                frame = made
                return made.unsafeMutableBytes
            }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
            scratch = buffer
            return buffer
        }
        if let frame {
            storage = .frame(frame)
        } else if let scratch {
            storage = .bytes([UInt8](scratch))
            scratch.deallocate()
        } else {
            storage = .bytes([])
        }
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
