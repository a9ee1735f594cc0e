#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Locking

/// Runs a process's services together and stops them together.
///
/// ``run()`` starts the services in order, each in a task of its own; a ``LifecycleService`` is
/// started (its `start()` returned) before the next one starts, and a failing start stops the
/// group. Shutdown begins on the first of: one of `signals` arriving, ``triggerShutdown()``,
/// cancellation of the task calling ``run()``, or a service throwing or returning. Shutdown
/// stops the services in reverse start order, cancelling each one's task and waiting for it to
/// return before cancelling the one started before it (as swift-service-lifecycle does), so a
/// service never outlives one it depends on; a service that throws `CancellationError` during
/// shutdown counts as stopped gracefully. A signal that arrives while already shutting down
/// exits the process at once with status 130.
public final class ServiceGroup: Sendable {
    /// Where the group is in its life.
    private enum State {
        /// ``run()`` has not started; `shutdownRequested` records an early ``triggerShutdown()``.
        case idle(shutdownRequested: Bool)
        /// Services are running; finishing `shutdown` wakes ``run()`` to cancel them.
        case running(shutdown: AsyncStream<Never>.Continuation)
        /// Services have been cancelled and are being awaited.
        case shuttingDown
        /// ``run()`` has returned.
        case finished
    }

    /// A service that was started: the task running it.
    private struct Started {
        let name: String
        let task: Task<Void, any Error>
    }

    /// The services, in start order.
    private let services: [any Service]
    /// Receives the group's lifecycle messages.
    private let logger: Logger
    /// The signals that trigger a graceful shutdown.
    private let signals: [Int32]
    /// Ends the process; `exit` except in tests.
    private let forceExit: @Sendable (Int32) -> Void
    /// The lifecycle state.
    private let state = Locked(State.idle(shutdownRequested: false))

    /// Creates a group.
    ///
    /// - Parameters:
    ///   - services: The services to run, started in this order.
    ///   - logger: Receives start, signal, failure and stop messages.
    ///   - signals: Signals that start a graceful shutdown; pass `[]` to handle none.
    public convenience init(services: [any Service], logger: Logger, signals: [Int32] = [SIGTERM, SIGINT]) {
        self.init(services: services, logger: logger, signals: signals, forceExit: { exit($0) })
    }

    /// Creates a group whose forced exit on a repeated signal calls `forceExit` (for tests).
    init(services: [any Service], logger: Logger, signals: [Int32], forceExit: @escaping @Sendable (Int32) -> Void) {
        self.services = services
        self.logger = logger
        self.signals = signals
        self.forceExit = forceExit
    }

    /// Runs every service until shutdown, then waits for all of them to return.
    ///
    /// Call at most once per group.
    ///
    /// - Throws: The first error thrown by a service, or ``ServiceGroupError/serviceReturnedEarly(_:)``
    ///   if a service returned before shutdown began; in both cases only after every service returned.
    public func run() async throws {
        let (shutdownStream, shutdownContinuation) = AsyncStream<Never>.makeStream()
        let requestedEarly = state.withLock { state in
            guard case .idle(let shutdownRequested) = state else {
                preconditionFailure("ServiceGroup.run() called more than once")
            }
            state = .running(shutdown: shutdownContinuation)
            return shutdownRequested
        }
        if requestedEarly {
            beginShutdown { logger.notice("shutdown was requested before start") }
        }

        let subscription = signals.isEmpty ? nil : SignalSubscription(signals: signals) { [self] number in
            handleSignal(number)
        }
        defer { subscription?.cancel() }

        logger.info("starting services", ["services": services.map(\.name).joined(separator: ",")])
        let firstError: (any Error)? = await withTaskCancellationHandler {
            await runServices(until: shutdownStream)
        } onCancel: {
            beginShutdown()
        }

        let unfinished: AsyncStream<Never>.Continuation? = state.withLock { state in
            defer { state = .finished }
            if case .running(let shutdown) = state { return shutdown }
            return nil
        }
        unfinished?.finish()
        if let firstError {
            logger.error("services stopped after a failure", ["error": "\(firstError)"])
            throw firstError
        }
        logger.info("all services stopped")
    }

    /// Starts the services in order, waits for shutdown (or a service ending by itself), then
    /// stops them in reverse order, each once the one started after it has returned.
    ///
    /// - Returns: The first failure: a service's error, or its return before shutdown.
    private func runServices(until shutdown: AsyncStream<Never>) async -> (any Error)? {
        var firstError: (any Error)?
        var started: [Started] = []
        for service in services where !isShuttingDown {
            guard let lifecycle = service as? any LifecycleService else {
                started.append(Started(name: service.name, task: Task { try await service.run() }))
                continue
            }
            // Started here, in order, so a service finds those before it ready; on a thread of
            // its own, as its stop, so neither holds a thread of the shared pool.
            do {
                try await onThreadOfItsOwn(service.name) { try lifecycle.start() }
            } catch {
                await onThreadOfItsOwn(service.name) { lifecycle.stop() }  // releases what a half-done start holds
                logger.error("service failed", ["service": service.name, "error": "\(error)"])
                firstError = error
                beginShutdown()
                break
            }
            started.append(Started(name: service.name, task: Task {
                if let failable = lifecycle as? any FailableLifecycleService {
                    let failed = await failable.failure()
                    await onThreadOfItsOwn(lifecycle.name) { lifecycle.stop() }
                    if let failed { throw failed }
                } else {
                    await waitForCancellation()
                    await onThreadOfItsOwn(lifecycle.name) { lifecycle.stop() }
                }
            }))
        }

        // Nothing runs (no services, or the first failed to start): nothing to wait for.
        guard !started.isEmpty else { return firstError }
        return await withTaskGroup(of: Int?.self) { group in
            group.addTask {
                for await _ in shutdown {}
                return nil
            }
            for (index, service) in started.enumerated() {
                group.addTask {
                    _ = await service.task.result
                    return index
                }
            }
            // The first to end: the shutdown request, or a service ending by itself.
            let endedFirst = await group.next() ?? nil
            if let index = endedFirst {
                let name = started[index].name
                switch await started[index].task.result {
                case .success where !Task.isCancelled && beginShutdown():
                    // A return racing with the cancellation of run()'s own task is not early.
                    logger.error("service returned early; stopping the others", ["service": name])
                    firstError = firstError ?? ServiceGroupError.serviceReturnedEarly(name)
                case .success:
                    logger.debug("service stopped", ["service": name])
                case .failure(let error) where error is CancellationError && (isShuttingDown || Task.isCancelled):
                    logger.debug("service stopped", ["service": name])
                case .failure(let error):
                    logger.error("service failed", ["service": name, "error": "\(error)"])
                    firstError = firstError ?? error
                    beginShutdown()
                }
            }
            // The last started stops first: the RPC host drains before the stores it calls close.
            for index in started.indices.reversed() where index != endedFirst {
                let service = started[index]
                service.task.cancel()
                switch await service.task.result {
                case .success:
                    logger.debug("service stopped", ["service": service.name])
                case .failure(let error) where error is CancellationError:
                    // Propagating the cancellation that shutdown caused is a graceful stop.
                    logger.debug("service stopped", ["service": service.name])
                case .failure(let error):
                    logger.error("service failed", ["service": service.name, "error": "\(error)"])
                    firstError = firstError ?? error
                }
            }
            group.cancelAll()
            return firstError
        }
    }

    /// Starts a graceful shutdown: every service's task is cancelled and ``run()`` returns once they
    /// have all returned. Before ``run()`` starts, makes it stop right away; afterwards, has no effect.
    public func triggerShutdown() {
        beginShutdown { logger.notice("shutdown requested") }
    }

    /// Moves to shutting down and wakes ``run()``.
    ///
    /// - Parameter announce: Runs before ``run()`` is woken, only if this call starts the shutdown,
    ///   so its log line precedes those of the stopping services.
    /// - Returns: `true` if this call started the shutdown of a running group.
    @discardableResult
    private func beginShutdown(announce: () -> Void = {}) -> Bool {
        let continuation: AsyncStream<Never>.Continuation? = state.withLock { state in
            switch state {
            case .idle:
                state = .idle(shutdownRequested: true)
                return nil
            case .running(let shutdown):
                state = .shuttingDown
                return shutdown
            case .shuttingDown, .finished:
                return nil
            }
        }
        guard let continuation else { return false }
        announce()
        continuation.finish()
        return true
    }

    /// Whether services have been cancelled and are being awaited.
    private var isShuttingDown: Bool {
        state.withLock { state in
            if case .shuttingDown = state { return true }
            return false
        }
    }

    /// Starts a graceful shutdown on the first signal; exits with status 130 on a signal during shutdown.
    private func handleSignal(_ number: Int32) {
        let name = UnixSignals.name(of: number)
        if beginShutdown(announce: { logger.notice("received \(name); shutting down", ["signal": name]) }) {
            return
        }
        if isShuttingDown {
            logger.critical("received \(name) while shutting down; exiting immediately", ["signal": name, "status": "130"])
            forceExit(130)
        }
    }
}
