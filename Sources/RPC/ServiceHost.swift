import Proto
import Runtime
import Synchronization
import ZMQ

/// One process's serving parts: an RPC server (with Health) and, for services, an event publisher.
///
/// Service modules register their handlers on `server` before `start()`; the host is a
/// `Service`, so a `ServiceGroup` runs it and stops it on SIGTERM/SIGINT.
public final class ServiceHost: Service {
    public let name: String
    /// The RPC server; register methods before `start()`.
    public let server: RPCServer
    private let context: Context
    private let eventEndpoints: [String]
    private let logger: Logger
    private let publisher = Mutex<EventPublisher?>(nil)
    private let onStop = Mutex<[@Sendable () -> Void]>([])

    /// A host for `name` serving RPC on `rpcEndpoints` and events on `eventEndpoints` (may be empty).
    public init(
        name: String, context: Context, rpcEndpoints: [String], eventEndpoints: [String] = [],
        maxMessageBytes: Int = Defaults.maxMessageBytes, logger: Logger
    ) throws {
        self.name = name
        self.context = context
        self.eventEndpoints = eventEndpoints
        self.logger = logger
        server = try RPCServer(
            context: context,
            configuration: .init(endpoints: rpcEndpoints, processName: name, maxMessageBytes: maxMessageBytes),
            logger: logger)
    }

    /// Binds RPC and events; throws when an endpoint is taken or invalid.
    public func start() throws {
        if !eventEndpoints.isEmpty {
            let events = try EventPublisher(context: context, endpoints: eventEndpoints, logger: logger)
            publisher.withLock { $0 = events }
        }
        do {
            try server.start()
        } catch {
            publisher.withLock { $0?.stop() }
            throw error
        }
    }

    /// Runs `action` when the host stops, before the sockets close (newest first).
    public func addStopAction(_ action: @escaping @Sendable () -> Void) {
        onStop.withLock { $0.insert(action, at: 0) }
    }

    /// Stops serving and closes every socket; safe to call twice.
    public func stop() {
        server.servingStatus = .notServing
        let actions = onStop.withLock { actions in
            defer { actions.removeAll() }
            return actions
        }
        for action in actions { action() }
        server.stop()
        let events = publisher.withLock { publisher in
            defer { publisher = nil }
            return publisher
        }
        events?.stop()
    }

    /// The RPC endpoints bound, wildcards resolved.
    public var rpcEndpoints: [String] { server.boundEndpoints }

    /// The event endpoints bound, wildcards resolved.
    public var eventEndpointsBound: [String] { publisher.withLock { $0?.boundEndpoints ?? [] } }

    /// Publishes an event if this host has an event socket.
    public func publish(topic: String, _ event: some ProtoMessage) {
        publisher.withLock { $0 }?.publish(topic: topic, event)
    }

    /// Starts, serves until cancelled, then stops.
    public func run() async throws {
        try start()
        await waitForCancellation()
        stop()
    }
}
