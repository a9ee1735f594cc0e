import Locking

/// Bounds the CPU- and memory-heavy part of jobs, so a worker can run more jobs than it has
/// cores, and bounds what they hold at once.
///
/// - **Slots**: at most `count` bodies run at once. A worker running more jobs than slots has
///   the extra ones read their input (a round trip that would leave a core idle) while the
///   others compute; they wait here holding only that input.
/// - **Memory**: each body says what it will hold (`cost`, e.g. `Thumbnailer.workingBytes`),
///   and bodies start only while the costs of those running add up to at most `budgetBytes`.
///   A body over the whole budget still runs, alone, so no input waits for ever.
///
/// First come, first served: a large body at the head of the line is not overtaken by smaller
/// ones behind it. A task cancelled while it waits leaves the line at once with
/// `CancellationError` and takes nothing.
public final class ComputeSlots: Sendable {
    private struct Waiter {
        let id: UInt64
        let cost: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        var bytes = 0
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())
    /// The number of slots.
    public let count: Int
    /// The most the running bodies' costs may add up to.
    public let budgetBytes: Int

    /// `count` slots (at least one), and a memory budget (unbounded by default).
    public init(count: Int, budgetBytes: Int = .max) {
        self.count = max(1, count)
        self.budgetBytes = max(0, budgetBytes)
    }

    /// Runs `body` once a slot is free and `cost` fits the budget; throws `CancellationError`
    /// when the task is cancelled before (and `body` does not run).
    public func run<T>(cost: Int = 0, _ body: @Sendable () throws -> T) async throws -> T {
        let cost = max(0, cost)
        try await acquire(cost)
        defer { release(cost) }
        return try body()
    }

    /// `run` of a body that reads its input before it computes on it (an input too large to be
    /// held outside the budget): the slot and `cost` are held while it reads too.
    public func runReading<T>(cost: Int = 0, _ body: @Sendable () async throws -> T) async throws -> T {
        let cost = max(0, cost)
        try await acquire(cost)
        defer { release(cost) }
        return try await body()
    }

    /// Bodies running, the bytes they said they hold, and tasks waiting (for tests and stats).
    public var usage: (running: Int, bytes: Int, waiting: Int) {
        state.withLock { ($0.running, $0.bytes, $0.waiting.count) }
    }

    /// Whether a body of `cost` may start beside what runs.
    private func admits(_ cost: Int, _ state: State) -> Bool {
        state.running < count && (state.running == 0 || cost <= budgetBytes - state.bytes)
    }

    private func acquire(_ cost: Int) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withVisibleCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now = state.withLock { state -> Result<Void, any Error>? in
                    // Checked under the lock: a cancellation that came first is seen here, one
                    // that comes later finds the waiter in the line.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.waiting.isEmpty && admits(cost, state) {
                        state.running += 1
                        state.bytes += cost
                        return .success(())
                    }
                    state.waiting.append(Waiter(id: id, cost: cost, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let (cancelled, admitted) = state.withLock { state -> (Waiter?, [Waiter]) in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return (nil, []) }
                let waiter = state.waiting.remove(at: index)
                // It may have been the head that held the others back.
                return (waiter, admitHead(&state))
            }
            cancelled?.continuation.resume(throwing: CancellationError())
            for waiter in admitted { waiter.continuation.resume() }
        }
    }

    private func release(_ cost: Int) {
        let admitted = state.withLock { state -> [Waiter] in
            state.running -= 1
            state.bytes -= cost
            return admitHead(&state)
        }
        for waiter in admitted { waiter.continuation.resume() }
    }

    /// Takes the waiters at the head of the line that may start now, in order.
    private func admitHead(_ state: inout State) -> [Waiter] {
        var admitted: [Waiter] = []
        while let head = state.waiting.first, admits(head.cost, state) {
            state.waiting.removeFirst()
            state.running += 1
            state.bytes += head.cost
            admitted.append(head)
        }
        return admitted
    }
}
