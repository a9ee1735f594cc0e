import Dispatch
import Locking

/// Serial queues lent out one caller at a time: `run` waits for a free lane as a suspended
/// task, never on a thread, and then runs its work there.
///
/// For long blocking work that must be bounded (renders: one decode per core) and must not
/// hold what other work needs while it waits for its turn. Waiting on a semaphore inside an
/// I/O lane did: 32 renditions held all 16 I/O lanes, most of them waiting for one of the two
/// render slots, and a 1 KB put queued behind them until its deadline.
final class LanePool: Sendable {
    private struct State {
        var free: [Int]
        /// Callers waiting for a lane, first come first served.
        var waiting: [CheckedContinuation<Int, Never>] = []
    }

    private let queues: [DispatchQueue]
    private let state: Locked<State>

    init(label: String, count: Int) {
        precondition(count > 0, "a lane pool needs a lane")
        queues = (0..<count).map { DispatchQueue(label: "\(label).\($0)") }
        state = Locked(State(free: Array(0..<count)))
    }

    /// Runs `work` on a lane no other work holds, once one is free.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let lane = await take()
        defer { give(lane) }
        return try await withVisibleCheckedThrowingContinuation { continuation in
            queues[lane].async { continuation.resume(with: Result { try work() }) }
        }
    }

    private func take() async -> Int {
        await withVisibleCheckedContinuation { continuation in
            let lane = state.withLock { state -> Int? in
                if let lane = state.free.popLast() { return lane }
                state.waiting.append(continuation)
                return nil
            }
            if let lane { continuation.resume(returning: lane) }
        }
    }

    private func give(_ lane: Int) {
        let next = state.withLock { state -> CheckedContinuation<Int, Never>? in
            if state.waiting.isEmpty {
                state.free.append(lane)
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume(returning: lane)
    }
}
