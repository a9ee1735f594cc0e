import Foundation
import Proto
import Runtime
import Locking
import Synchronization
import ZMQ

/// Calls one server over a DEALER socket, many requests in flight, matched by request_id.
///
/// One I/O thread owns the socket; callers on any thread or task hand it requests through a
/// queue. The socket sets ZMQ_IMMEDIATE, so nothing is queued for a server that is not
/// connected: such a call fails with UNAVAILABLE after `connectWaitMilliseconds` (and is
/// retried, since it never reached a server). A connection lost with calls in flight fails
/// them with UNAVAILABLE at once (socket monitor), and libzmq reconnects with backoff.
public final class RPCClient: Sendable {
    /// Connection settings.
    public struct Configuration: Sendable {
        /// How long a call waits for a connection before UNAVAILABLE.
        public var connectWaitMilliseconds: Int
        /// The largest reply frame accepted.
        public var maxMessageBytes: Int
        /// libzmq's reconnect backoff, first and largest, in milliseconds.
        public var reconnectMilliseconds: (first: Int32, max: Int32)
        /// ZMTP heartbeats: a silent peer is dropped after `heartbeatTimeout` ms.
        public var heartbeatInterval: Int32
        public var heartbeatTimeout: Int32

        /// Defaults suited to loopback and LAN.
        public init(
            connectWaitMilliseconds: Int = 1000, maxMessageBytes: Int = Defaults.maxMessageBytes,
            reconnectMilliseconds: (first: Int32, max: Int32) = (50, 1000),
            heartbeatInterval: Int32 = 1000, heartbeatTimeout: Int32 = 5000
        ) {
            self.connectWaitMilliseconds = connectWaitMilliseconds
            self.maxMessageBytes = maxMessageBytes
            self.reconnectMilliseconds = reconnectMilliseconds
            self.heartbeatInterval = heartbeatInterval
            self.heartbeatTimeout = heartbeatTimeout
        }
    }

    /// A reply: the response header's code and message, and the body bytes.
    public struct RawReply: Sendable {
        public let code: StatusCode
        public let message: String
        public let retryAfterMilliseconds: UInt32
        /// `ResponseHeader.reason`: which of the code's causes.
        public let reason: String
        /// The body as received (decoded in place by `call`).
        public let bodyFrame: Frame

        /// A copy of the body bytes.
        public var body: [UInt8] { bodyFrame.bytes }
    }

    /// How an attempt ended, as the retry logic needs to know it.
    enum Outcome: Sendable {
        case reply(RawReply)
        /// Never handed to a connected server.
        case notSent(String)
        /// Sent, then the connection dropped before the reply.
        case lost(String)
        case timedOut
        case cancelled
    }

    struct Pending {
        // Unsafe: the I/O thread resumes each exactly once (resolve removes it first), and the
        // checked variant costs an allocation per call on the hot path.
        let continuation: UnsafeContinuation<Outcome, Never>
        let deadline: Int64
        var sent = false
    }

    /// A request waiting for the I/O thread to hand it to the socket.
    struct Outgoing {
        let id: UInt64
        let message: OutgoingMessage
        let sendBy: Int64
    }

    struct Shared {
        var pending: [UInt64: Pending] = [:]
        var outbox: [Outgoing] = []
        var cancelled: [UInt64] = []
        var closing = false
        var connected = false
    }

    /// The server's endpoint.
    public let endpoint: String
    let configuration: Configuration
    let context: Context
    let shared = Locked(Shared())
    let nextRequestID = Atomic<UInt64>(1)
    /// The I/O thread: owns the socket; `loop.wake()` brings it to the requests queued.
    let loop: SocketLoop
    let monitorEndpoint: String
    let ioExecutor: IOThreadExecutor

    /// The client's I/O thread as a task executor: calls made in
    /// `withTaskExecutorPreference(client.executor) { … }` are sent and resumed on that thread,
    /// without a thread hand-over each way. Only for code that awaits calls one after another
    /// and computes little in between (see ``IOThreadExecutor``).
    public var executor: some TaskExecutor { ioExecutor }

    /// Connects (in the background) to `endpoint`.
    public init(context: Context, endpoint: String, configuration: Configuration = .init()) throws {
        self.context = context
        self.endpoint = endpoint
        self.configuration = configuration
        self.loop = try SocketLoop(name: "rpc-client")
        self.ioExecutor = IOThreadExecutor(loop: loop)
        self.monitorEndpoint = "inproc://rpc-client-monitor-\(UUID().uuidString)"
        do {
            try loop.start { [self] poller in try IOLoop(self, poller) }
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
    }

    /// Fails calls in flight with CANCELLED and stops the I/O thread (once the code running on
    /// it returns, when called there through ``executor``).
    public func close() {
        shared.withLock { $0.closing = true }
        // Wakes the loop and, but on its own thread, waits for its end.
        loop.stop()
    }

    /// Whether the socket has a live connection now (monitor events).
    public var isConnected: Bool { shared.withLock { $0.connected } }

    /// Calls a method with typed messages; throws `RPCError` for every non-OK outcome.
    public func call<Request, Response>(
        _ method: ProtoMethod<Request, Response>, _ request: Request, options: CallOptions = .init()
    ) async throws(RPCError) -> Response {
        try await call(method, request, options: options) { frame, limit throws(ProtoDecodingError) in
            try Response(frame: frame, options: limit)
        }
    }

    /// `call` for a reply carrying a large `bytes` field the caller can use where it lies in the
    /// received frame: at 64 KiB and up, field `largeBytesField` of the response is left empty and
    /// handed over as `FrameBytes` (nil when the field is small or absent, and then decoded into
    /// the response as usual). Saves a copy of the photo per read (GetImage's `data`,
    /// `GetImageResponse.dataField`), as the server's `register(_:largeBytesField:…)` does for puts.
    public func call<Request, Response>(
        _ method: ProtoMethod<Request, Response>, _ request: Request, largeBytesField: UInt32, options: CallOptions = .init()
    ) async throws(RPCError) -> (response: Response, bytes: FrameBytes?) {
        try await call(method, request, options: options) { frame, limit throws(ProtoDecodingError) in
            let decoded = try frame.withUnsafeBytes { buffer throws(ProtoDecodingError) in
                try Response.decode(buffer, options: limit, leavingLargeBytesField: largeBytesField)
            }
            return (decoded.message, decoded.field.map { FrameBytes(frame: frame, range: $0) })
        }
    }

    /// Sends `request` and decodes the OK reply's body with `decode`; a body that does not
    /// decode is INTERNAL.
    private func call<Request, Response, Decoded>(
        _ method: ProtoMethod<Request, Response>, _ request: Request, options: CallOptions,
        decode: (Frame, DecodingOptions) throws(ProtoDecodingError) -> Decoded
    ) async throws(RPCError) -> Decoded {
        let reply = try await callRaw(
            path: method.path, body: MessageBody(encoding: request), readOnly: method.isReadOnly, options: options)
        do {
            return try decode(reply.bodyFrame, DecodingOptions(maxBytes: configuration.maxMessageBytes))
        } catch {
            throw RPCError(.internal, "reply of \(method.path) does not parse: \(error)")
        }
    }

    /// Calls any method with encoded bytes (the CLI's `call`); throws `RPCError` unless OK.
    public func callRaw(
        path: String, body: [UInt8], readOnly: Bool, options: CallOptions = .init()
    ) async throws(RPCError) -> RawReply {
        try await callRaw(path: path, body: MessageBody(bytes: body), readOnly: readOnly, options: options)
    }

    /// Calls any method with an encoded body; throws `RPCError` unless OK.
    public func callRaw(
        path: String, body: MessageBody, readOnly: Bool, options: CallOptions = .init()
    ) async throws(RPCError) -> RawReply {
        let start = monotonicMilliseconds()
        let deadline = start + Int64(options.timeoutMilliseconds)
        var header = RequestHeader()
        header.method = path
        if !options.metadata.isEmpty {
            header.metadata = options.metadata.sorted { $0.key < $1.key }.map {
                var entry = MetadataEntry()
                entry.key = $0.key
                entry.value = $0.value
                return entry
            }
        }
        if !readOnly { header.idempotencyKey = options.idempotencyKey ?? UUID().uuidString.lowercased() }
        let retrySafe = readOnly || !header.idempotencyKey.isEmpty

        var attempt = 1
        while true {
            let now = monotonicMilliseconds()
            guard now < deadline else {
                throw .deadlineExceeded("\(path) did not finish within \(options.timeoutMilliseconds) ms")
            }
            header.requestId = nextRequestID.add(1, ordering: .relaxed).oldValue
            header.timeoutMs = UInt32(clamping: deadline - now)
            let outcome = await attemptCall(
                header: header, body: body, deadline: deadline + Int64(options.replyGraceMilliseconds),
                sendBy: min(deadline, now + Int64(configuration.connectWaitMilliseconds)))
            let error: RPCError
            var mayRetry: Bool
            var wait = 0
            switch outcome {
            case let .reply(reply):
                if reply.code == .ok { return reply }
                error = RPCError(reply.code, reply.message, retryAfterMilliseconds: reply.retryAfterMilliseconds, reason: reply.reason)
                mayRetry = reply.code == .resourceExhausted && reply.retryAfterMilliseconds > 0
                    || reply.code == .unavailable && retrySafe
                wait = Int(reply.retryAfterMilliseconds)
            case let .notSent(why):
                error = .unavailable(why)
                mayRetry = true
            case let .lost(why):
                error = .unavailable(why)
                mayRetry = retrySafe
            case .timedOut:
                throw .deadlineExceeded("\(path) got no reply from \(endpoint) within \(options.timeoutMilliseconds) ms")
            case .cancelled:
                throw RPCError(.cancelled, "\(path) was cancelled")
            }
            guard mayRetry, attempt < options.retry.maxAttempts, !Task.isCancelled else { throw error }
            let backoff = max(wait, options.retry.backoff(retry: attempt))
            guard monotonicMilliseconds() + Int64(backoff) < deadline else { throw error }
            try? await Task.sleep(for: .milliseconds(backoff))
            attempt += 1
        }
    }

    private func attemptCall(header: RequestHeader, body: MessageBody, deadline: Int64, sendBy: Int64) async -> Outcome {
        let id = header.requestId
        let message = Envelope.request(header, body)
        return await withTaskCancellationHandler {
            await withVisibleUnsafeContinuation { (continuation: UnsafeContinuation<Outcome, Never>) in
                let closing = shared.withLock { state -> Bool in
                    if state.closing { return true }
                    state.pending[id] = Pending(continuation: continuation, deadline: deadline)
                    state.outbox.append(Outgoing(id: id, message: message, sendBy: sendBy))
                    return false
                }
                if closing {
                    continuation.resume(returning: .cancelled)
                } else if !ioExecutor.onLoopThread {
                    // On the I/O thread (``executor``) the loop sends it before it next polls.
                    loop.wake()
                }
            }
        } onCancel: {
            shared.withLock { $0.cancelled.append(id) }
            loop.wake()
        }
    }
}
