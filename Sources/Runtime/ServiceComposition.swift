/// The long-lived parts of one process (stores, background services, the RPC host), in the
/// order they start: each may use those before it, so they stop in the reverse order.
///
/// A part's factory builds one and starts nothing; the executable hands ``services`` to a
/// ``ServiceGroup``, the Harness calls ``start()`` and ``stop()``: the same objects in the
/// same order either way.
public struct ServiceComposition: Sendable {
    /// The services, in start order.
    public let services: [any LifecycleService]

    /// A composition starting `services` in this order.
    public init(_ services: [any LifecycleService]) {
        self.services = services
    }

    /// Starts every service in order; when one throws, stops it and those already started
    /// (newest first) and rethrows.
    public func start() throws {
        for (index, service) in services.enumerated() {
            do {
                try service.start()
            } catch {
                for started in services[...index].reversed() { started.stop() }
                throw error
            }
        }
    }

    /// Stops every service, the last started first; safe to call twice.
    public func stop() {
        for service in services.reversed() { service.stop() }
    }

    /// The first service of type `T` (the part's RPC host, say).
    public func first<T>(_ type: T.Type) -> T? {
        services.lazy.compactMap { $0 as? T }.first
    }
}
