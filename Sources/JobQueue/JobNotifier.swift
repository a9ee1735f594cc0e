import Locking

/// Wakes every task waiting for a queue's jobs: ``signal()`` ends all the waits in progress.
///
/// Unlike Runtime's `WakeSignal` (one waiter, a kept signal), any number of tasks wait here,
/// each from a generation it read before it looked for work: a signal after that read ends
/// its wait at once, so a job committed between the look and the sleep is never slept past.
public final class JobNotifier: Sendable {
    private enum Wait {
        /// Registered, not asleep yet.
        case starting
        /// Its timer or cancellation came before it slept.
        case ended
        case sleeping(CheckedContinuation<Void, Never>)
    }

    private struct State {
        var generation: UInt64 = 0
        var lastWait: UInt64 = 0
        /// The waits in progress; one is removed as it returns.
        var waits: [UInt64: Wait] = [:]
    }

    private let state = Locked(State())

    /// A notifier nobody waits on.
    public init() {}

    /// The number of signals so far: read it before looking for work, pass it to ``wait(since:timeoutMilliseconds:)``.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// How many tasks wait now.
    public var waiterCount: Int { state.withLock { $0.waits.count } }

    /// Ends every wait in progress, and any about to begin from an older generation.
    public func signal() {
        let sleepers = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            var sleepers: [CheckedContinuation<Void, Never>] = []
            for (id, wait) in state.waits {
                guard case .sleeping(let continuation) = wait else { continue }
                sleepers.append(continuation)
                state.waits[id] = .ended
            }
            return sleepers
        }
        for sleeper in sleepers { sleeper.resume() }
    }

    /// Sleeps until a signal after `generation`, for at most `timeoutMilliseconds`, or until
    /// the task is cancelled; returns at once when a signal came since `generation`.
    public func wait(since generation: UInt64, timeoutMilliseconds: Int64) async {
        let id = state.withLock { state -> UInt64 in
            state.lastWait &+= 1
            state.waits[state.lastWait] = .starting
            return state.lastWait
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: .milliseconds(max(0, timeoutMilliseconds)))
            end(id)
        }
        defer {
            timer.cancel()
            state.withLock { _ = $0.waits.removeValue(forKey: id) }
        }
        await withTaskCancellationHandler {
            await withVisibleCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if case .ended = state.waits[id] { return true }
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waits[id] = .sleeping(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            end(id)
        }
    }

    /// Ends wait `id`: wakes it if it sleeps, or marks it to end as it begins; nothing once it returned.
    private func end(_ id: UInt64) {
        let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
            switch state.waits[id] {
            case .sleeping(let continuation):
                state.waits[id] = .ended
                return continuation
            case .starting:
                state.waits[id] = .ended
                return nil
            case .ended, nil:
                return nil
            }
        }
        sleeper?.resume()
    }
}
