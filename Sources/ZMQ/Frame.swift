import CZMQ

/// One frame of a multipart message: small ones as bytes, large ones still in their
/// `zmq_msg_t`, so reading a received frame or sending a built one copies nothing.
///
/// libzmq reads a large frame straight into the message's own buffer, so a 20 MB photo can be
/// decoded from where the socket put it, and an encoder can write a reply straight into the
/// frame that will be sent. A frame is immutable once built; it may move between threads (a
/// `zmq_msg_t` is not tied to the socket that received it) and be sent more than once.
public struct Frame: Sendable {
    enum Storage: Sendable {
        case bytes([UInt8])
        case message(FrameMessage)
    }

    let storage: Storage

    /// Received frames smaller than this are copied out of their message: one allocation
    /// instead of keeping the message (envelopes, headers, small bodies).
    static let copyBelow = 2048

    init(storage: Storage) { self.storage = storage }

    /// A frame holding `bytes`.
    public init(_ bytes: [UInt8]) { storage = .bytes(bytes) }

    /// A frame of `count` bytes written by `initialize`, in memory libzmq owns: sending it later
    /// copies nothing (an encoder can write a message straight into its frame).
    public init(count: Int, initialize: (UnsafeMutableRawBufferPointer) -> Void) {
        let message = FrameMessage(count: count)
        initialize(message.mutableBytes)
        storage = .message(message)
    }

    /// A frame of `count` bytes in memory libzmq owns, to be written through
    /// `unsafeMutableBytes` before it is first sent.
    public init(uninitializedCount count: Int) {
        storage = .message(FrameMessage(count: count))
    }

    /// The memory of a frame made with `init(uninitializedCount:)`, for filling it before it is
    /// first sent (empty for other frames); writing to a frame that was sent or received
    /// breaks its immutability.
    public var unsafeMutableBytes: UnsafeMutableRawBufferPointer {
        guard case .message(let message) = storage else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        return message.mutableBytes
    }

    /// The frame's size in bytes.
    public var count: Int {
        switch storage {
        case .bytes(let bytes): bytes.count
        case .message(let message): message.count
        }
    }

    public var isEmpty: Bool { count == 0 }

    /// Reads the bytes in place; the pointer is valid only inside `body`.
    public func withUnsafeBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        switch storage {
        case .bytes(let bytes):
            var result: Result<T, E>?
            bytes.withUnsafeBytes { buffer in result = Result { () throws(E) -> T in try body(buffer) } }
            return try result!.get()
        case .message(let message):
            return try withExtendedLifetime(message) { () throws(E) -> T in try body(UnsafeRawBufferPointer(message.mutableBytes)) }
        }
    }

    /// The bytes when the frame holds them as an array (small frames): no copy, no closure.
    public var storedBytes: [UInt8]? {
        if case .bytes(let bytes) = storage { return bytes }
        return nil
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] {
        switch storage {
        case .bytes(let bytes): bytes
        case .message(let message): [UInt8](UnsafeRawBufferPointer(message.mutableBytes))
        }
    }

    /// Sets `target` (an initialised, empty message) to this frame's data: a message frame is
    /// shared by reference count, so only bytes frames are copied.
    func load(into target: UnsafeMutablePointer<zmq_msg_t>) -> Int32 {
        switch storage {
        case .message(let message):
            return zmq_msg_copy(target, message.message)
        case .bytes(let bytes):
            zmq_msg_close(target)
            guard zmq_msg_init_size(target, bytes.count) == 0 else { return -1 }
            if !bytes.isEmpty { bytes.withUnsafeBytes { zmq_msg_data(target).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            return 0
        }
    }
}

/// A `zmq_msg_t` on the heap, closed when the last frame holding it goes.
final class FrameMessage: @unchecked Sendable {
    let message: UnsafeMutablePointer<zmq_msg_t>

    /// Takes over `message` (initialised, received into).
    init(adopting message: UnsafeMutablePointer<zmq_msg_t>) {
        self.message = message
    }

    /// A message of `count` bytes (uninitialised).
    convenience init(count: Int) {
        let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
        if zmq_msg_init_size(message, count) != 0 {
            // Out of memory in libzmq: nothing sensible is left to do.
            fatalError("zmq_msg_init_size(\(count)) failed")
        }
        self.init(adopting: message)
    }

    deinit {
        zmq_msg_close(message)
        message.deallocate()
    }

    var count: Int { zmq_msg_size(message) }

    var mutableBytes: UnsafeMutableRawBufferPointer {
        let size = count
        return UnsafeMutableRawBufferPointer(start: size > 0 ? zmq_msg_data(message) : nil, count: size)
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
                    if body.load(into: message) != 0 {
                        let code = zmq_errno()
                        zmq_msg_close(message)
                        throw ZMQError(code: code, operation: "zmq_msg_copy")
                    }
                }
                // After a successful send the message is already empty, so closing is
                // harmless; after a failure it still owns its buffer and must be closed.
                defer { zmq_msg_close(message) }
                var flags: Int32 = index < count - 1 ? ZMQ_SNDMORE : 0
                if dontWait { flags |= ZMQ_DONTWAIT }
                let rc = retryingInterrupts { zmq_msg_send(message, socket, flags) }
                // Only the first frame can be refused with EAGAIN in practice; libzmq rolls
                // back already-queued parts if a later one is, so "nothing sent" holds.
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
        try receiveMessage(dontWait: dontWait, readUserID: false)?.frames
    }

    /// Receives one whole multipart message (as `receiveFrames`) with its `User-Id` property:
    /// the user id the ZAP handler gave the sending connection (`zmq_msg_gets`), nil when the
    /// connection was not authenticated by one.
    public func receiveFramesWithUserID(dontWait: Bool = false) throws -> (frames: [Frame], userID: String?)? {
        try receiveMessage(dontWait: dontWait, readUserID: true)
    }

    // Inlined into both callers, so `receiveFrames` pays nothing for the User-Id branch.
    @inline(__always)
    private func receiveMessage(dontWait: Bool, readUserID: Bool) throws(ZMQError) -> (frames: [Frame], userID: String?)? {
        let socket = try live("zmq_msg_recv")
        return try withUnsafeTemporaryAllocation(of: zmq_msg_t.self, capacity: 1) { slot throws(ZMQError) -> (frames: [Frame], userID: String?)? in
            let message = slot.baseAddress!
            var userID: String?
            var frames: [Frame] = []
            frames.reserveCapacity(4)  // the protocol's messages have 3 or 4 frames
            while true {
                try check(zmq_msg_init(message), "zmq_msg_init")
                // libzmq delivers multipart messages atomically, so only the first frame can be
                // missing; later frames are read without DONTWAIT.
                let flags: Int32 = frames.isEmpty && dontWait ? ZMQ_DONTWAIT : 0
                let rc = retryingInterrupts { zmq_msg_recv(message, socket, flags) }
                if rc == -1 {
                    let code = zmq_errno()
                    zmq_msg_close(message)
                    if flags != 0 && code == EAGAIN { return nil }
                    throw ZMQError(code: code, operation: "zmq_msg_recv(\(type), frame \(frames.count + 1))")
                }
                let more = zmq_msg_more(message) != 0
                // Every frame of a message carries its connection's metadata, but a ROUTER's
                // routing-id frame may not: look until one has it.
                if readUserID && userID == nil, let value = zmq_msg_gets(message, "User-Id") {
                    userID = String(cString: value)
                }
                let size = zmq_msg_size(message)
                if size == 0 {
                    // Not Array(unsafeUninitializedCapacity: 0): that stores the count into the
                    // shared empty-array singleton, a write ThreadSanitizer reports against every
                    // thread reading an empty array (RELIABILITY.md, Sanitizers).
                    frames.append(Frame([]))
                    zmq_msg_close(message)
                } else if size < Frame.copyBelow {
                    frames.append(Frame([UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                        UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: zmq_msg_data(message), byteCount: size)
                        count = size
                    }))
                    zmq_msg_close(message)
                } else {
                    // Moved, not copied: the heap message takes the data over.
                    let kept = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
                    zmq_msg_init(kept)
                    zmq_msg_move(kept, message)
                    zmq_msg_close(message)
                    frames.append(Frame(storage: .message(FrameMessage(adopting: kept))))
                }
                if !more { return (frames, userID) }
            }
        }
    }
}
