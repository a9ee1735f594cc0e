import Foundation
import Locking

/// Where a part reports a failure it must not run on after (a database commit whose outcome is
/// not known because the disk failed under its fsync): the process stops, answering what is in
/// flight UNAVAILABLE, and the next start's recovery decides what the disk holds. PostgreSQL does
/// the same since 2018 rather than retry an fsync and trust it.
///
/// In a ``ServiceGroup`` (the executables) it is the first service of a part's composition: it
/// fails with ``ProcessFault`` at the first report, and the group stops every other service, the
/// last started first (the RPC host drains, the stores close), and the process exits 1. Without a
/// group (the Harness), `onFault` handlers do the stopping.
public final class FaultWatch: FailableLifecycleService {
    public let name = "fault-watch"
    private let logger: Logger

    private struct State {
        var fault: String?
        var waiters: [CheckedContinuation<Void, Never>] = []
        var handlers: [@Sendable (String) -> Void] = []
    }

    private let state = Locked(State())

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Records the first fault (later ones are only logged) and wakes whoever stops the process.
    public func report(_ reason: String) {
        let (first, waiters, handlers) = state.withLock { state in
            guard state.fault == nil else { return (false, [CheckedContinuation<Void, Never>](), [@Sendable (String) -> Void]()) }
            state.fault = reason
            defer { state.waiters.removeAll() }
            return (true, state.waiters, state.handlers)
        }
        guard first else {
            logger.error("another storage fault while stopping", ["error": reason])
            return
        }
        logger.critical("storage fault: stopping, so that recovery at the next start decides what was stored", ["error": reason])
        for waiter in waiters { waiter.resume() }
        // Off the reporting thread, which may be one the handler's stopping joins.
        for handler in handlers { startThreadOfItsOwn("fault-stop") { handler(reason) } }
    }

    /// The first fault reported, if any.
    public var fault: String? { state.withLock { $0.fault } }

    /// Calls `handler` (on a thread of its own) at the first fault, or at once if there was one.
    public func onFault(_ handler: @escaping @Sendable (String) -> Void) {
        let fault = state.withLock { state -> String? in
            if state.fault == nil { state.handlers.append(handler) }
            return state.fault
        }
        if let fault { startThreadOfItsOwn("fault-stop") { handler(fault) } }
    }

    public func start() throws {}
    public func stop() {}

    /// ``ProcessFault`` at the first fault; nil once the task is cancelled (a graceful stop).
    public func failure() async -> (any Error)? {
        await withTaskCancellationHandler {
            await withVisibleCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fault != nil || Task.isCancelled { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiters = state.withLock { state in
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        return fault.map { ProcessFault(reason: $0) }
    }
}

/// The process stopped because of a storage fault (``FaultWatch``).
public struct ProcessFault: Error, CustomStringConvertible, Sendable {
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String {
        "stopped after a storage fault (\(reason)); restart it: recovery at start decides what was stored"
    }
}
