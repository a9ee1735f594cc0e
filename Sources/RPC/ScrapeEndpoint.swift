import CurveAuth
import Foundation
import Runtime
import Locking
import ZMQ

/// A Prometheus scrape endpoint: plain HTTP on a ZeroMQ STREAM socket, no HTTP library.
///
/// One thread of its own owns the socket. `GET /metrics` (and `HEAD`) answers 200 with what
/// `body` returns, `GET /` a pointer to /metrics, other paths 404, other methods 405, a
/// malformed request 400, a head over 8 KiB 431, and with a bearer token a request without it
/// 401; every reply closes its connection (request bodies are never read).
///
/// It binds where other machines reach it only with a token (`--metrics-token-file`) or
/// `--insecure`, as the RPC servers need keys there. A hostile peer cannot hurt it: the text is
/// rendered at most once per `refreshMilliseconds` whatever the rate of scrapes (the figures'
/// queries never run once per request), in a task while the thread goes on serving (at most
/// `maxConnections` requests wait for it; beyond, 503), a connection whose request is not complete within the
/// read deadline is closed (slowloris), at most `maxConnections` are open (a new one closes the
/// oldest, so idle connections never lock a real scrape out), and a connection holds at most 8 KiB.
public final class ScrapeEndpoint: LifecycleService {
    /// Names this endpoint in logs and its thread, e.g. "item-service".
    public let name: String
    let context: Context
    let endpoint: String
    let logger: Logger
    let body: @Sendable () async -> String
    /// How long a connection may take to send its whole request head.
    let idleTimeoutMilliseconds: Int
    /// Connections open at once; a newer one closes the oldest.
    let maxConnections: Int
    /// How long a rendered text is served before the next scrape renders it again.
    let refreshMilliseconds: Int
    /// What every request must present (`Authorization: Bearer …`); nil: nothing.
    let token: BearerToken?

    struct Shared {
        var started = false
        var stopping = false
        var boundEndpoint: String?
        var startError: (any Error)?
        /// A render's text, from its task to the loop.
        var renderedText: Rendered?
        /// Requests waiting for a render's text, as the loop last counted them.
        var awaitingText = 0
    }

    let shared = Locked(Shared())
    /// The thread that owns the socket.
    let loop: SocketLoop

    /// An endpoint serving `body()` on `endpoint` (e.g. `tcp://0.0.0.0:9464`, `tcp://127.0.0.1:0`) once started.
    ///
    /// - Parameters:
    ///   - token: What requests must present; needed to bind an address other machines reach
    ///     (unless the context's `TransportSecurity` is `insecure`).
    ///   - body: The metrics text; called in a task of its own, at most once per
    ///     `refreshMilliseconds` and never twice at once; requests for /metrics wait for it.
    public convenience init(
        name: String, context: Context, endpoint: String, token: BearerToken? = nil, logger: Logger,
        body: @escaping @Sendable () async -> String
    ) throws {
        try self.init(
            name: name, context: context, endpoint: endpoint, token: token, logger: logger, idleTimeoutMilliseconds: 2000,
            maxConnections: 64, refreshMilliseconds: 2000, body: body)
    }

    /// As the public init, with the limits tests shorten.
    init(
        name: String, context: Context, endpoint: String, token: BearerToken? = nil, logger: Logger,
        idleTimeoutMilliseconds: Int, maxConnections: Int, refreshMilliseconds: Int = 2000, body: @escaping @Sendable () async -> String
    ) throws {
        self.name = name
        self.context = context
        self.endpoint = endpoint
        self.token = token
        self.logger = logger
        self.body = body
        self.idleTimeoutMilliseconds = idleTimeoutMilliseconds
        self.maxConnections = maxConnections
        self.refreshMilliseconds = refreshMilliseconds
        loop = try SocketLoop(name: "scrape-\(name)")
    }

    deinit {
        stop()
    }

    /// The endpoint bound (a wildcard address or port 0 resolved), after `start()`.
    public var boundEndpoint: String? { shared.withLock { $0.boundEndpoint } }

    /// Requests for /metrics waiting for the text being rendered.
    var awaitingText: Int { shared.withLock { $0.awaitingText } }

    /// Binds on a new thread; returns once bound, or throws why not (endpoint taken or invalid).
    public func start() throws {
        try shared.withLock { state in
            guard !state.started else { throw ScrapeEndpointError(endpoint: endpoint, reason: "already started") }
            guard !state.stopping else { throw ScrapeEndpointError(endpoint: endpoint, reason: "stopped") }
            state.started = true
        }
        if let refusal = refusal() {
            let error = ScrapeEndpointError(endpoint: endpoint, reason: refusal)
            logger.warning("cannot serve metrics", ["endpoint": endpoint, "error": error.reason])
            shared.withLock { $0.startError = error }
            throw error
        }
        do {
            try loop.start { [self] poller in try ScrapeLoop(self, poller) }
        } catch {
            shared.withLock { $0.startError = error }
            logger.warning("cannot serve metrics", ["endpoint": endpoint, "error": "\(error)"])
            throw error
        }
        logger.info("serving metrics", ["metrics": boundEndpoint ?? endpoint])
    }

    /// Why this endpoint must not be bound, if it must not: not TCP, or reachable from other
    /// machines with nothing asked of who scrapes (no token, and not --insecure).
    private func refusal() -> String? {
        guard endpoint.hasPrefix("tcp://") else { return "a scrape endpoint must be tcp://host:port" }
        guard token == nil, !TransportSecurity.isLocal(endpoint) else { return nil }
        if TransportSecurity.of(context)?.insecure == true {
            logger.warning("serving metrics WITHOUT a token (--insecure): anyone who reaches it can read the figures", ["metrics": endpoint])
            return nil
        }
        return "refusing to serve metrics on \(endpoint) without a token: anyone who reaches it could read the figures and "
            + "load the stores. Pass --metrics-token-file FILE (\(EnvironmentNames.metricsTokenFile); homepwner keys init "
            + "writes one as metrics.token; scrapers send 'Authorization: Bearer' and its text), bind a loopback address "
            + "(tcp://127.0.0.1:PORT), or pass --insecure (\(EnvironmentNames.insecure)=1)"
    }

    /// Stops serving: closes the open connections and the socket and joins the thread; safe
    /// twice and before `start()`.
    public func stop() {
        shared.withLock { $0.stopping = true }
        loop.stop()
    }
}

/// A scrape endpoint that could not start.
public struct ScrapeEndpointError: Error, CustomStringConvertible, Sendable {
    /// The endpoint asked for.
    public let endpoint: String
    /// Why, e.g. "Address already in use".
    public let reason: String

    public var description: String { "scrape endpoint \(endpoint): \(reason)" }
}
