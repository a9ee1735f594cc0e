import Proto
import Runtime
import Synchronization
import ZMQ

/// One process's serving parts: an RPC server (with Health) and, for services, its event
/// socket (owned by the server's I/O thread, so a publish costs no extra thread wake-up).
///
/// Service modules register their handlers on `server` before `start()`; the host is a
/// `Service`, so a `ServiceGroup` runs it and stops it on SIGTERM/SIGINT.
public final class ServiceHost: Service {
    public let name: String
    /// The RPC server; register methods before `start()`.
    public let server: RPCServer
    private let onStop = Mutex<[@Sendable () -> Void]>([])

    /// A host for `name` serving RPC on `rpcEndpoints` and events on `eventEndpoints` (may be empty).
    public init(
        name: String, context: Context, rpcEndpoints: [String], eventEndpoints: [String] = [],
        maxMessageBytes: Int = Defaults.maxMessageBytes, logger: Logger
    ) throws {
        self.name = name
        server = try RPCServer(
            context: context,
            configuration: .init(
                endpoints: rpcEndpoints, processName: name, maxMessageBytes: maxMessageBytes,
                eventEndpoints: eventEndpoints),
            logger: logger)
    }

    /// Binds RPC and events; throws when an endpoint is taken or invalid.
    public func start() throws {
        try server.start()
        if !server.boundEventEndpoints.isEmpty {
            server.logger.info("publishing events", ["events": server.boundEventEndpoints.joined(separator: ",")])
        }
    }

    /// Runs `action` when the host stops (newest first): after the server has stopped taking
    /// calls and those in flight have finished (or the grace time passed), before the sockets
    /// close. Close stores here: no call can reach them any more.
    public func addStopAction(_ action: @escaping @Sendable () -> Void) {
        onStop.withLock { $0.insert(action, at: 0) }
    }

    /// Stops serving and closes every socket; safe to call twice.
    ///
    /// The server first answers every new call 14 UNAVAILABLE and lets the calls in flight
    /// finish (up to `stopGraceMilliseconds`); only then do the stop actions close the stores,
    /// so a call never meets a closed store (which answered 9 FAILED_PRECONDITION, a refusal
    /// clients do not retry). Calls still running after the grace time are answered 14.
    public func stop() {
        server.servingStatus = .notServing
        if !server.drain(timeoutMilliseconds: server.configuration.stopGraceMilliseconds) {
            server.logger.warning("calls still in flight after the stop grace time; they are answered UNAVAILABLE",
                ["grace_ms": String(server.configuration.stopGraceMilliseconds), "in_flight": String(server.stats.inFlight)])
        }
        let actions = onStop.withLock { actions in
            defer { actions.removeAll() }
            return actions
        }
        for action in actions { action() }
        server.stop()
    }

    /// The RPC endpoints bound, wildcards resolved.
    public var rpcEndpoints: [String] { server.boundEndpoints }

    /// The event endpoints bound, wildcards resolved.
    public var eventEndpointsBound: [String] { server.boundEventEndpoints }

    /// Publishes an event if this host has an event socket.
    public func publish(topic: String, _ event: some ProtoMessage, wakeIOThread: Bool = true) {
        server.publish(topic: topic, event, wakeIOThread: wakeIOThread)
    }

    /// Starts, serves until cancelled, then stops.
    public func run() async throws {
        try start()
        await waitForCancellation()
        stop()
    }
}
