/// A ``Service`` that starts and stops synchronously: ``start()`` returns once it is ready (a
/// store open, a socket bound, a thread running) or throws why not, and ``stop()`` returns once
/// it has let go of everything (threads joined, files closed).
///
/// A ``ServiceGroup`` starts these one after another, each only once the one before it has
/// started, and a ``ServiceComposition`` starts and stops them without a task (the Harness).
public protocol LifecycleService: Service {
    /// Starts the service; throws when it cannot (``stop()`` is then called to release what a
    /// half-done start holds).
    func start() throws
    /// Stops the service and releases what it holds; safe to call twice, before ``start()``
    /// and after a failed one.
    func stop()
}

extension LifecycleService {
    /// Starts, runs until the task is cancelled, then stops; start and stop run on a thread of
    /// their own (``onThreadOfItsOwn(_:_:)``), so they never block a thread of the shared pool.
    public func run() async throws {
        try await onThreadOfItsOwn(name) { try start() }
        await waitForCancellation()
        await onThreadOfItsOwn(name) { stop() }
    }
}

/// A ``LifecycleService`` that can fail while it runs (``FaultWatch``): a ``ServiceGroup`` waits
/// on ``failure()`` instead of only for cancellation, and stops the group when it returns an error.
public protocol FailableLifecycleService: LifecycleService {
    /// Returns the failure once the service has failed, or nil once the task is cancelled.
    func failure() async -> (any Error)?
}

extension FailableLifecycleService {
    /// Starts, runs until the task is cancelled or the service fails, then stops; throws the failure.
    public func run() async throws {
        try await onThreadOfItsOwn(name) { try start() }
        let failed = await failure()
        await onThreadOfItsOwn(name) { stop() }
        if let failed { throw failed }
    }
}

/// Suspends until the current task is cancelled.
public func waitForCancellation() async {
    while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(3600))
    }
}
