#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZMQ

/// A libzmq socket.
///
/// Belongs to one thread at a time (not `Sendable`). `ZMQ_LINGER` is set to 0 at creation so
/// terminating the context never waits for undelivered messages (change it with `setLinger`).
/// `deinit` closes the socket if `close()` was not called.
public final class Socket {
    /// The pattern this socket was created with.
    public let type: SocketType

    // nil once closed: every call goes through `live`, so a closed socket throws ENOTSOCK
    // instead of handing a freed pointer to libzmq.
    private(set) var handle: UnsafeMutableRawPointer?

    // Held until close so the context cannot be terminated (and hang in zmq_ctx_term)
    // while this socket is still open.
    private var context: Context?

    /// Creates a socket of `type` in `context`, with LINGER 0.
    public init(_ context: Context, _ type: SocketType) throws {
        guard let handle = zmq_socket(context.handle, type.rawValue) else {
            throw ZMQError(code: zmq_errno(), operation: "zmq_socket(\(type))")
        }
        var linger: Int32 = 0
        let rc = zmq_setsockopt(handle, ZMQ_LINGER, &linger, MemoryLayout<Int32>.size)
        if rc == -1 {
            let error = ZMQError(code: zmq_errno(), operation: "zmq_setsockopt(ZMQ_LINGER, 0)")
            zmq_close(handle)
            throw error
        }
        self.type = type
        self.handle = handle
        self.context = context
    }

    deinit {
        close()
    }

    /// The open handle, or `ENOTSOCK` when the socket was closed.
    func live(_ operation: @autoclosure () -> String) throws(ZMQError) -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(code: ENOTSOCK, operation: operation()) }
        return handle
    }

    /// Binds to `endpoint`, e.g. `tcp://127.0.0.1:*` or `inproc://name`.
    public func bind(_ endpoint: String) throws {
        let socket = try live("zmq_bind(\(endpoint))")
        try check(zmq_bind(socket, endpoint), "zmq_bind(\(endpoint))")
    }

    /// Connects to `endpoint`; libzmq connects (and reconnects) in the background.
    public func connect(_ endpoint: String) throws {
        let socket = try live("zmq_connect(\(endpoint))")
        try check(zmq_connect(socket, endpoint), "zmq_connect(\(endpoint))")
    }

    /// Stops listening on `endpoint` (use `lastEndpoint` for wildcard binds).
    public func unbind(_ endpoint: String) throws {
        let socket = try live("zmq_unbind(\(endpoint))")
        try check(zmq_unbind(socket, endpoint), "zmq_unbind(\(endpoint))")
    }

    /// Drops the connection to `endpoint`.
    public func disconnect(_ endpoint: String) throws {
        let socket = try live("zmq_disconnect(\(endpoint))")
        try check(zmq_disconnect(socket, endpoint), "zmq_disconnect(\(endpoint))")
    }

    /// Closes the socket and releases its context; calling it again does nothing.
    public func close() {
        guard let handle else { return }
        // zmq_close only fails with ENOTSOCK, which the nil check above rules out.
        zmq_close(handle)
        self.handle = nil
        context = nil
    }

    /// Sends all frames as one multipart message (SNDMORE on all but the last).
    ///
    /// Returns false only when `dontWait` is set and the message could not be queued (`EAGAIN`);
    /// nothing was sent in that case. Without `dontWait`, an expired send timeout throws
    /// a `ZMQError` whose `isAgain` is true. An empty `frames` array throws `EINVAL`.
    @discardableResult
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws -> Bool {
        guard let last = frames.last else {
            throw ZMQError(code: EINVAL, operation: "zmq_msg_send(no frames)")
        }
        return try send(Array(frames.dropLast()), body: Frame(last), dontWait: dontWait)
    }

    /// Receives one whole multipart message, every frame as an array of its own.
    ///
    /// Returns nil when `dontWait` is set and nothing is queued. Without `dontWait`, an
    /// expired receive timeout throws a `ZMQError` whose `isAgain` is true.
    public func receive(dontWait: Bool = false) throws -> [[UInt8]]? {
        try receiveFrames(dontWait: dontWait).map { frames in frames.map(\.bytes) }
    }
}

// Spelled out so nobody adds an unchecked conformance: a socket must stay on one thread.
@available(*, unavailable, message: "a Socket belongs to one thread; create it on the thread that uses it")
extension Socket: Sendable {}

