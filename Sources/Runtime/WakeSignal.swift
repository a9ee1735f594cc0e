import Locking

/// Wakes a task that sleeps until there is work: ``signal()`` ends the current (or the next)
/// ``wait(timeoutMilliseconds:)``, as do its timeout and the waiting task's cancellation.
///
/// Signals do not add up: one that arrives while nobody waits is kept, and however many there
/// were, it ends one wait. For one waiter at a time (a service's loop).
public final class WakeSignal: Sendable {
    private struct State {
        /// A signal arrived while nobody waited.
        var signalled = false
        /// The wait in progress, by number, and how to resume it.
        var waiter: (wait: UInt64, continuation: CheckedContinuation<Void, Never>)?
        /// A wait whose timeout or cancellation came before it had begun to sleep.
        var ended: UInt64?
        /// The number of the latest wait.
        var waits: UInt64 = 0
    }

    private let state = Locked(State())

    /// A signal nobody has waited for yet.
    public init() {}

    /// Whether a wait is asleep now (for tests that must signal a wait in progress).
    var hasSleeper: Bool { state.withLock { $0.waiter != nil } }

    /// Ends the wait in progress, or else the next one.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Sleeps until a signal (one kept from before counts), for at most `timeoutMilliseconds`,
    /// or until the task is cancelled.
    public func wait(timeoutMilliseconds: Int64) async {
        let wait = state.withLock { state -> UInt64 in
            state.waits += 1
            return state.waits
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: .milliseconds(max(0, timeoutMilliseconds)))
            end(wait)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withVisibleCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.signalled || state.ended == wait || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = (wait, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            end(wait)
        }
    }

    /// Ends wait number `wait` if it is still in progress, or before it sleeps.
    private func end(_ wait: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter, waiter.wait == wait else {
                state.ended = wait
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }
}
