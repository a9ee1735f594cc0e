import CurveAuth
import Foundation
import Proto
import Runtime
import Locking
import ZMQ

/// Serves the methods of one process on a ZeroMQ ROUTER socket (docs/protocol.md).
///
/// One I/O thread owns the socket: it reads requests, answers what it can at once (bad frames,
/// unknown methods, idempotent replays, expired deadlines) and starts a task per request.
/// Handlers run concurrently on the Swift concurrency pool and never touch the socket: their
/// replies go through a queue that wakes the I/O thread. Handlers that block (disk, SQLite)
/// should move that work off the cooperative pool.
public final class RPCServer: Sendable {
    /// Limits and endpoints.
    public struct Configuration: Sendable {
        /// Endpoints to bind, e.g. "tcp://127.0.0.1:5551", "ipc:///tmp/x", "inproc://items".
        public var endpoints: [String]
        /// The largest frame accepted (MAXMSGSIZE; a bigger frame disconnects its sender).
        public var maxMessageBytes: Int
        /// Budget of a call whose header says timeout_ms = 0.
        public var defaultTimeoutMilliseconds: UInt32
        /// Requests served at once (callers waiting on a running idempotency key included);
        /// beyond it: RESOURCE_EXHAUSTED with retry_after_ms.
        public var maxInFlight: Int
        /// Bytes of request bodies held by the calls in flight; beyond it: RESOURCE_EXHAUSTED
        /// with retry_after_ms. A call is always admitted when nothing else is in flight.
        public var maxInFlightBytes: Int
        /// Calls one peer (one connection) may have in flight: so one client's flood leaves
        /// room for the others; beyond it: RESOURCE_EXHAUSTED with retry_after_ms.
        public var maxInFlightPerPeer: Int
        /// Bytes of request bodies one peer's calls in flight may hold (a peer's call is always
        /// admitted when it has nothing else in flight and the total allows it).
        public var maxInFlightBytesPerPeer: Int
        /// Finished mutating calls remembered for idempotent replay.
        public var idempotencyCapacity: Int
        /// Bytes those remembered calls may take (keys, messages and reply bodies).
        public var idempotencyMaxBytes: Int
        /// The longest idempotency key accepted, in bytes (UTF-8).
        public var maxIdempotencyKeyBytes: Int
        /// How long a finished mutating call is remembered.
        public var idempotencyTimeToLiveMilliseconds: Int64
        /// How long `ServiceHost.stop()` lets the calls in flight finish before the stores close.
        public var stopGraceMilliseconds: Int
        /// The process name reported by Health/Check, e.g. "item-service".
        public var processName: String
        /// PUB endpoints for events, owned by the same I/O thread (empty: no events).
        public var eventEndpoints: [String]
        /// How long a new connection (RPC or events) may take to finish its handshake, CURVE
        /// included, before it is closed: an unauthenticated TCP connection holds a descriptor
        /// no longer than this (libzmq's own default is 30 s).
        public var handshakeTimeoutMilliseconds: Int32 = 5000
        /// Where pooled handlers run (nil: the global concurrent executor); tests hold their
        /// start with it.
        var handlerExecutor: (any TaskExecutor)?

        /// A configuration with the protocol's defaults.
        ///
        /// - Parameters:
        ///   - maxInFlightBytes: nil for four times `maxMessageBytes`.
        ///   - maxInFlightPerPeer: nil for a quarter of `maxInFlight` (at least 1).
        ///   - maxInFlightBytesPerPeer: nil for half of `maxInFlightBytes`.
        public init(
            endpoints: [String],
            processName: String,
            maxMessageBytes: Int = Defaults.maxMessageBytes,
            defaultTimeoutMilliseconds: UInt32 = 30_000,
            maxInFlight: Int = 1024,
            maxInFlightBytes: Int? = nil,
            maxInFlightPerPeer: Int? = nil,
            maxInFlightBytesPerPeer: Int? = nil,
            idempotencyCapacity: Int = 10_000,
            idempotencyMaxBytes: Int = 64 << 20,
            maxIdempotencyKeyBytes: Int = 128,
            idempotencyTimeToLiveMilliseconds: Int64 = 10 * 60 * 1000,
            stopGraceMilliseconds: Int = 5000,
            eventEndpoints: [String] = []
        ) {
            self.endpoints = endpoints
            self.eventEndpoints = eventEndpoints
            self.processName = processName
            self.maxMessageBytes = maxMessageBytes
            self.defaultTimeoutMilliseconds = defaultTimeoutMilliseconds
            self.maxInFlight = maxInFlight
            self.maxInFlightBytes = maxInFlightBytes ?? 4 * maxMessageBytes
            self.maxInFlightPerPeer = maxInFlightPerPeer ?? max(1, maxInFlight / 4)
            self.maxInFlightBytesPerPeer = maxInFlightBytesPerPeer ?? (maxInFlightBytes ?? 4 * maxMessageBytes) / 2
            self.idempotencyCapacity = idempotencyCapacity
            self.idempotencyMaxBytes = idempotencyMaxBytes
            self.maxIdempotencyKeyBytes = maxIdempotencyKeyBytes
            self.idempotencyTimeToLiveMilliseconds = idempotencyTimeToLiveMilliseconds
            self.stopGraceMilliseconds = stopGraceMilliseconds
        }
    }

    /// A registered method, type-erased to bytes.
    struct Method: Sendable {
        /// Where a method's handler runs, and how its answer comes back to the I/O thread.
        enum Dispatch: Sendable {
            /// Runs on the I/O thread itself: only for handlers that never block.
            case inline(@Sendable (Frame, RPCContext) throws -> MessageBody)
            /// Runs as a task on the concurrency pool.
            case pooled(@Sendable (Frame, RPCContext) async throws -> MessageBody)
            /// Called on the I/O thread to hand the work to another thread, which replies later.
            case deferred(@Sendable (Frame, RPCContext, @escaping @Sendable (Result<MessageBody, any Error>) -> Void) -> Void)
        }

        let path: String
        let mutating: Bool
        let dispatch: Dispatch
        /// Who besides admin may call it, when CURVE keys are configured (the .proto's `allow`).
        var callers: [Caller] = []

        /// Whether it runs on the I/O thread (Health/Check): it still answers while draining.
        var isInline: Bool {
            if case .inline = dispatch { true } else { false }
        }
    }

    struct Shared {
        var methods: [String: Method] = [:]
        var started = false
        var stopping = false
        /// Set by `drain`: new calls (but Health/Check) are answered UNAVAILABLE.
        var draining = false
        /// Set by the I/O thread once draining and no call is in flight.
        var drained = false
        /// Set by `drain` when its time is up: the I/O thread answers the callers of the calls
        /// still in flight UNAVAILABLE, and sets `abandoned`.
        var abandoning = false
        var abandoned = false
        var boundEndpoints: [String] = []
        var boundEventEndpoints: [String] = []
        var events: [[[UInt8]]] = []
        var startError: (any Error)?
        var replies: [Completion] = []
        var servingStatus: HealthCheckResponse.ServingStatus = .serving
        /// What the parts report as wrong while the process serves (`setCondition`), by name.
        var conditions: [String: HealthCondition] = [:]
        /// Set when allowed keys were revoked: the I/O thread drops every event subscriber's
        /// connection, so each authenticates again (a revoked key then gets no more events).
        var resubscribeEvents = false
        /// Run when a drain begins (`onDrain`).
        var drainActions: [@Sendable () -> Void] = []
        /// Calls by method, made at `start()` once the methods are known.
        var metrics: CallMetrics?
        /// What the process's parts add to Metrics/Stats (`addFigures`).
        var figureSources: [@Sendable () async -> [Figure]] = []
        /// What the process's parts add to the conditions (`addHealthConditions`).
        var conditionSources: [@Sendable () -> [HealthCondition]] = []
    }

    /// A finished handler's answer, queued for the I/O thread.
    struct Completion {
        let ticket: UInt64
        let answer: Answer
    }

    let configuration: Configuration
    let context: Context
    let logger: Logger
    let shared = Locked(Shared())
    /// The I/O thread: owns the sockets; `loop.wake()` brings it to the replies and events queued.
    let loop: SocketLoop
    let counters = Counters()
    let startedAt = monotonicMilliseconds()

    /// A server bound nowhere yet; register methods, then `start()`.
    public init(context: Context, configuration: Configuration, logger: Logger) throws {
        self.context = context
        self.configuration = configuration
        self.logger = logger
        self.loop = try SocketLoop(name: "rpc-\(configuration.processName)")
        registerHealth()
        registerMetrics()
    }

    /// What Health/Check answers for the whole process (SERVING until set otherwise).
    public var servingStatus: HealthCheckResponse.ServingStatus {
        get { shared.withLock { $0.servingStatus } }
        set { shared.withLock { $0.servingStatus = newValue } }
    }

    /// Reports something wrong while the process goes on serving: Health/Check and Stats list
    /// it (the process is degraded) until `clearCondition(name)`. Setting a name again keeps
    /// when it began and updates the message.
    public func setCondition(_ name: String, _ message: String) {
        shared.withLock { state in
            var condition = HealthCondition()
            condition.name = name
            condition.message = message
            condition.sinceUnixMs = state.conditions[name]?.sinceUnixMs ?? UInt64(max(0, Date().timeIntervalSince1970 * 1000))
            state.conditions[name] = condition
        }
    }

    /// Ends a condition set by `setCondition`; nothing when it is not set.
    public func clearCondition(_ name: String) {
        shared.withLock { _ = $0.conditions.removeValue(forKey: name) }
    }

    /// What is wrong now, in name order: the parts' conditions (set, and from the sources
    /// added) and, with CURVE keys, an allowed-keys file whose latest version is not in force
    /// ("allowed_keys").
    public var conditions: [HealthCondition] {
        let (set, sources) = shared.withLock { (Array($0.conditions.values), $0.conditionSources) }
        var all = set + sources.flatMap { $0() }
        if let problem = TransportSecurity.of(context)?.server?.keys.problem {
            var condition = HealthCondition()
            condition.name = "allowed_keys"
            condition.message = problem.message
            condition.sinceUnixMs = UInt64(max(0, problem.sinceUnixMilliseconds))
            all.append(condition)
        }
        return all.sorted { $0.name < $1.name }
    }

    /// The endpoints actually bound (wildcard ports resolved), after `start()`.
    public var boundEndpoints: [String] { shared.withLock { $0.boundEndpoints } }

    /// The event endpoints actually bound, after `start()`.
    public var boundEventEndpoints: [String] { shared.withLock { $0.boundEventEndpoints } }

    /// Queues an event for the PUB socket; never blocks. The I/O thread sends it before the
    /// replies it sends next, so a subscriber sees a change's event before its caller's reply
    /// can lead anywhere. Events are best effort: a slow subscriber loses them (PUB at HWM).
    /// Published from a handler, an event leaves with that handler's reply; from a task the
    /// handler spawned (which inherits the handler's task-locals), with the server's next turn.
    ///
    /// - Parameter wakeIOThread: false when a reply follows at once from the same thread (a
    ///   deferred handler's completion), which wakes the I/O thread anyway.
    public func publish(topic: String, _ event: some ProtoMessage, wakeIOThread: Bool = true) {
        guard !configuration.eventEndpoints.isEmpty else { return }
        let frames = [Array(topic.utf8), event.serializedBytes()]
        shared.withLock { $0.events.append(frames) }
        // Inside a handler the I/O thread is woken by the handler's completion anyway, and
        // sends queued events before the reply: no wake-up of its own.
        if wakeIOThread && !Self.insideHandler { loop.wake() }
    }

    /// True in the task of a pooled handler (set by the I/O loop).
    @TaskLocal static var insideHandler = false

    /// Counters since start.
    public var stats: RPCServerStats { counters.snapshot() }

    /// Binds the endpoints on a new I/O thread; returns once bound, or throws why not.
    public func start() throws {
        // Before `started`: a refused start leaves nothing for stop() to wait for.
        try TransportSecurity.checkEndpoints(
            configuration.endpoints + configuration.eventEndpoints, process: configuration.processName,
            security: TransportSecurity.of(context), logger: logger)
        try shared.withLock { state in
            guard !state.started else { throw RPCError.failedPrecondition("server already started") }
            state.started = true
            state.metrics = CallMetrics(paths: Array(state.methods.keys), logger: logger)
        }
        do {
            try loop.start { [self] poller in try IOLoop(self, poller) }
        } catch {
            shared.withLock { $0.startError = error }
            throw error
        }
        let curve = TransportSecurity.of(context)?.server != nil
        logger.info("serving", ["rpc": boundEndpoints.joined(separator: ","), "security": curve ? "curve" : "none"])
    }

    /// Stops taking calls and lets those in flight finish: from now on every call but
    /// Health/Check is answered 14 UNAVAILABLE (the client may retry elsewhere or later).
    /// Returns true once no call is in flight (at once when the server is not running). When
    /// `timeoutMilliseconds` pass first, the callers still waiting are answered 14 UNAVAILABLE
    /// (their handlers are cancelled, and what they finish later is sent nowhere) and it returns
    /// false. `ServiceHost.stop()` drains before its stores close, so no caller is ever answered
    /// by a closed store.
    @discardableResult
    public func drain(timeoutMilliseconds: Int) -> Bool {
        let (running, actions) = shared.withLock { state -> (Bool, [@Sendable () -> Void]) in
            guard state.started && !state.stopping && state.startError == nil else { return (false, []) }
            state.draining = true
            return (true, state.drainActions)
        }
        guard running else { return true }
        loop.wake()
        for action in actions { action() }
        // The I/O thread notifies the loop's waiters when it sets `drained` and `abandoned`; a
        // wait also ends when the loop does (a stop).
        if loop.wait(timeoutMilliseconds: timeoutMilliseconds, until: { shared.withLock { $0.drained } }) { return true }
        // Time is up (or the loop ended): their callers are answered now, before the stores
        // close under the calls.
        shared.withLock { $0.abandoning = true }
        loop.wake()
        _ = loop.wait(timeoutMilliseconds: nil) { shared.withLock { $0.abandoned } }
        return false
    }

    /// Stops reading, answers the calls still in flight 14 UNAVAILABLE (their handlers are
    /// cancelled; they may have run), closes the socket and waits for the I/O thread to end.
    /// Every caller, from any thread, returns once the I/O thread has ended; before `start()`
    /// it makes a later start fail.
    public func stop() {
        shared.withLock { $0.stopping = true }
        loop.stop()
    }

    deinit {
        stop()
    }

    /// Adds a source of ``conditions`` (Health/Check and Stats): what an operator should see to
    /// while the process serves, for state a part keeps itself (a worker's jobs held for a full
    /// disk). Called on the I/O thread at every check: it must only read state (a lock, a
    /// counter), never wait.
    public func addHealthConditions(_ source: @escaping @Sendable () -> [HealthCondition]) {
        shared.withLock { $0.conditionSources.append(source) }
    }

    /// Runs `action` when a drain begins (new calls are refused from then on): for a handler
    /// that waits for something to happen (a long poll), to answer now instead of at its end.
    public func onDrain(_ action: @escaping @Sendable () -> Void) {
        shared.withLock { $0.drainActions.append(action) }
    }

    /// Queues a finished handler's answer and wakes the I/O thread.
    func complete(_ ticket: UInt64, _ answer: Answer) {
        shared.withLock { $0.replies.append(Completion(ticket: ticket, answer: answer)) }
        loop.wake()
    }

    /// Health/Check runs inline: it must answer even when every pool thread is busy.
    private func registerHealth() {
        // Registration is over once the first check arrives, so the names are computed once.
        let services = Locked<[String]?>(nil)
        registerInline(HealthRPC.check) { [weak self] request, _ in
            var response = HealthCheckResponse()
            guard let self else { return response }
            let services = services.withLock { names in
                if names == nil { names = self.serviceNames }
                return names!
            }
            response.process = self.configuration.processName
            response.version = HomepwnerVersion.string
            response.uptimeMs = UInt64(max(0, monotonicMilliseconds() - self.startedAt))
            response.services = services
            response.conditions = self.conditions
            if request.service.isEmpty || services.contains(request.service) {
                response.status = self.servingStatus
            } else {
                response.status = .serviceUnknown
            }
            return response
        }
    }
}
