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

    /// A frame of `count` bytes written by `initialize`, in memory libzmq owns: sending it later
    /// copies nothing (an encoder can write a message straight into its frame).
    public convenience init(count: Int, initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
        if zmq_msg_init_size(message, count) != 0 {
            // Out of memory in libzmq: nothing sensible is left to do.
            fatalError("zmq_msg_init_size(\(count)) failed")
        }
        initialize(UnsafeMutableRawBufferPointer(start: count > 0 ? zmq_msg_data(message) : nil, count: count))
        self.init(adopting: message)
    }

    /// A frame of `count` bytes to be written through `unsafeMutableBytes` before it is sent.
    public convenience init(uninitializedCount count: Int) {
        self.init(count: count) { _ in }
    }

    /// The frame's memory, for filling a frame made with `init(uninitializedCount:)` before it
    /// is first sent; writing to a frame that was sent or received breaks its immutability.
    public var unsafeMutableBytes: UnsafeMutableRawBufferPointer {
        let size = count
        return UnsafeMutableRawBufferPointer(start: size > 0 ? zmq_msg_data(message) : nil, count: size)
    }

    /// A frame holding a copy of `bytes`.
    public convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count) { target in
            if !bytes.isEmpty { bytes.withUnsafeBytes { target.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        }
    }

    /// Points `target` (an initialised, empty message) at this frame's data: large frames share
    /// their buffer by reference count, so the copy is free.
    func share(into target: UnsafeMutablePointer<zmq_msg_t>) -> Int32 {
        zmq_msg_copy(target, message)
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
    /// Sends `head` (copied, small frames) then `body` as the last frame of one multipart
    /// message; the body's data is not copied, and the frame can be sent again.
    ///
    /// Returns false only when `dontWait` is set and nothing could be queued (as `send(_:)`).
    @discardableResult
    public func send(_ head: [[UInt8]], body: Frame, dontWait: Bool = false) throws -> Bool {
        let socket = try live("zmq_msg_send")
        return try withUnsafeTemporaryAllocation(of: zmq_msg_t.self, capacity: 1) { slot throws(ZMQError) -> Bool in
            let message = slot.baseAddress!
            let count = head.count + 1
            for index in 0..<count {
                if index < head.count {
                    let frame = head[index]
                    try check(zmq_msg_init_size(message, frame.count), "zmq_msg_init_size(\(frame.count))")
                    if !frame.isEmpty {
                        frame.withUnsafeBytes { zmq_msg_data(message).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                    }
                } else {
                    try check(zmq_msg_init(message), "zmq_msg_init")
                    if body.share(into: message) != 0 {
                        let code = zmq_errno()
                        zmq_msg_close(message)
                        throw ZMQError(code: code, operation: "zmq_msg_copy")
                    }
                }
                // Closed after the send either way (see `send(_:)`).
                defer { zmq_msg_close(message) }
                var flags: Int32 = index < count - 1 ? ZMQ_SNDMORE : 0
                if dontWait { flags |= ZMQ_DONTWAIT }
                let rc = retryingInterrupts { zmq_msg_send(message, socket, flags) }
                if rc == -1 && dontWait && zmq_errno() == EAGAIN { return false }
                try check(rc, "zmq_msg_send(\(type), frame \(index + 1) of \(count))")
            }
            return true
        }
    }

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
