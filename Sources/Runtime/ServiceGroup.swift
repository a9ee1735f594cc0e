#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Runs a process's services together and stops them together.
///
/// ``run()`` starts every service in a child task. Shutdown begins on the first of: one of
/// `signals` arriving, ``triggerShutdown()``, cancellation of the task calling ``run()``, or a
/// service throwing or returning. Shutdown cancels every service's task and waits for all of them
/// to return; a service that throws `CancellationError` during shutdown counts as stopped
/// gracefully. A signal that arrives while already shutting down exits the process at once with
/// status 130.
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

    /// What a child task of ``run()`` reports.
    private enum ChildResult: Sendable {
        /// Shutdown was requested from outside the services.
        case shutdownRequested
        /// The watcher for outside requests was cancelled; nothing to do.
        case watcherStopped
        /// A service returned.
        case serviceReturned(String)
        /// A service threw.
        case serviceFailed(String, any Error)
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
    private let state = Mutex(State.idle(shutdownRequested: false))

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
            await withTaskGroup(of: ChildResult.self) { group in
                group.addTask {
                    for await _ in shutdownStream {}
                    return Task.isCancelled ? .watcherStopped : .shutdownRequested
                }
                for service in services {
                    group.addTask {
                        do {
                            try await service.run()
                            return .serviceReturned(service.name)
                        } catch {
                            return .serviceFailed(service.name, error)
                        }
                    }
                }

                var firstError: (any Error)?
                var running = services.count
                while running > 0, let result = await group.next() {
                    switch result {
                    case .shutdownRequested:
                        group.cancelAll()
                    case .watcherStopped:
                        break
                    case .serviceReturned(let name):
                        running -= 1
                        // A return racing with the cancellation of run()'s own task is not early.
                        if !Task.isCancelled, beginShutdown() {
                            logger.error("service returned early; stopping the others", ["service": name])
                            firstError = firstError ?? ServiceGroupError.serviceReturnedEarly(name)
                            group.cancelAll()
                        } else {
                            logger.debug("service stopped", ["service": name])
                        }
                    case .serviceFailed(let name, let error) where error is CancellationError && (isShuttingDown || Task.isCancelled):
                        // Propagating the cancellation that shutdown caused is a graceful stop.
                        running -= 1
                        logger.debug("service stopped", ["service": name])
                    case .serviceFailed(let name, let error):
                        running -= 1
                        logger.error("service failed", ["service": name, "error": "\(error)"])
                        firstError = firstError ?? error
                        if beginShutdown() {
                            group.cancelAll()
                        }
                    }
                }
                group.cancelAll()
                return firstError
            }
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
