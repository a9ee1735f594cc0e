import Proto
import Runtime
import ZMQ

/// One process's serving parts: an RPC server (with Health) and, for services, its event
/// socket (owned by the server's I/O thread, so a publish costs no extra thread wake-up).
///
/// Service modules register their handlers on `server` before `start()`. The host is the last
/// service of its part's `ServiceComposition`: it starts once the stores are open and stops
/// (drained) before they close.
public final class ServiceHost: LifecycleService {
    public let name: String
    /// The RPC server; register methods before `start()`.
    public let server: RPCServer

    /// A host for `name` serving RPC on `rpcEndpoints` and events on `eventEndpoints` (may be empty).
    public init(
        name: String, context: Context, rpcEndpoints: [String], eventEndpoints: [String] = [],
        maxMessageBytes: Int = Defaults.maxMessageBytes, stopGraceMilliseconds: Int = 5000, logger: Logger
    ) throws {
        self.name = name
        server = try RPCServer(
            context: context,
            configuration: .init(
                endpoints: rpcEndpoints, processName: name, maxMessageBytes: maxMessageBytes,
                stopGraceMilliseconds: stopGraceMilliseconds, eventEndpoints: eventEndpoints),
            logger: logger)
    }

    /// Binds RPC and events; throws when an endpoint is taken or invalid.
    public func start() throws {
        try server.start()
        if !server.boundEventEndpoints.isEmpty {
            server.logger.info("publishing events", ["events": server.boundEventEndpoints.joined(separator: ",")])
        }
    }

    /// Stops serving and closes every socket; safe to call twice.
    ///
    /// The server first answers every new call 14 UNAVAILABLE and lets the calls in flight
    /// finish (up to `stopGraceMilliseconds`); the services started before the host (its
    /// stores) stop after it returns, so a call never meets a closed store (which answered 9
    /// FAILED_PRECONDITION, a refusal clients do not retry). Calls still running after the
    /// grace time are answered 14.
    public func stop() {
        server.servingStatus = .notServing
        if !server.drain(timeoutMilliseconds: server.configuration.stopGraceMilliseconds) {
            server.logger.warning("calls still in flight after the stop grace time; they are answered UNAVAILABLE",
                ["grace_ms": String(server.configuration.stopGraceMilliseconds), "in_flight": String(server.stats.inFlight)])
        }
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
}

extension ServiceComposition {
    /// The part's RPC host (its server, events and endpoints): every part has one.
    public var host: ServiceHost {
        guard let host = first(ServiceHost.self) else { preconditionFailure("a part's composition has no ServiceHost") }
        return host
    }
}
