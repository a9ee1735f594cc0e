import CZMQ

/// One received frame, still in its `zmq_msg_t`: reading it copies nothing.
///
/// libzmq reads a large frame straight into the message's own buffer, so a 20 MB photo can be
/// decoded from where the socket put it. The frame is immutable and owns its message, which
/// is closed when the last reference goes; it may move between threads (a `zmq_msg_t` is not
/// tied to the socket that received it).
public final class Frame: @unchecked Sendable {
    private let message: UnsafeMutablePointer<zmq_msg_t>

    /// Takes over `message` (initialised, received into).
    init(adopting message: UnsafeMutablePointer<zmq_msg_t>) {
        self.message = message
    }

    /// A frame holding a copy of `bytes` (for tests and callers that build frames).
    public convenience init(_ bytes: [UInt8]) {
        let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
        if zmq_msg_init_size(message, bytes.count) != 0 {
            // Out of memory in libzmq: nothing sensible is left to do.
            fatalError("zmq_msg_init_size(\(bytes.count)) failed")
        }
        if !bytes.isEmpty {
            bytes.withUnsafeBytes { zmq_msg_data(message).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        self.init(adopting: message)
    }

    deinit {
        zmq_msg_close(message)
        message.deallocate()
    }

    /// The frame's size in bytes.
    public var count: Int { zmq_msg_size(message) }

    public var isEmpty: Bool { count == 0 }

    /// Reads the bytes in place; the pointer is valid only inside `body`.
    public func withUnsafeBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        let size = count
        return try withExtendedLifetime(self) { () throws(E) -> T in
            try body(UnsafeRawBufferPointer(start: size > 0 ? UnsafeRawPointer(zmq_msg_data(message)) : nil, count: size))
        }
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] {
        withUnsafeBytes { [UInt8]($0) }
    }
}

extension Socket {
    /// Receives one whole multipart message without copying its frames out of libzmq.
    ///
    /// Returns nil when `dontWait` is set and nothing is queued. Without `dontWait`, an
    /// expired receive timeout throws a `ZMQError` whose `isAgain` is true.
    public func receiveFrames(dontWait: Bool = false) throws -> [Frame]? {
        let socket = try live("zmq_msg_recv")
        var frames: [Frame] = []
        frames.reserveCapacity(4)  // the protocol's messages have 3 or 4 frames
        while true {
            let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
            guard zmq_msg_init(message) == 0 else {
                message.deallocate()
                throw ZMQError(code: zmq_errno(), operation: "zmq_msg_init")
            }
            // libzmq delivers multipart messages atomically, so only the first frame can be
            // missing; later frames are read without DONTWAIT.
            let flags: Int32 = frames.isEmpty && dontWait ? ZMQ_DONTWAIT : 0
            let rc = retryingInterrupts { zmq_msg_recv(message, socket, flags) }
            if rc == -1 {
                let code = zmq_errno()
                zmq_msg_close(message)
                message.deallocate()
                if flags != 0 && code == EAGAIN { return nil }
                throw ZMQError(code: code, operation: "zmq_msg_recv(\(type), frame \(frames.count + 1))")
            }
            let frame = Frame(adopting: message)
            frames.append(frame)
            if zmq_msg_more(message) == 0 { return frames }
        }
    }
}
