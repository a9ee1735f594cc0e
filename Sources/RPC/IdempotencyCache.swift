/// Replays the first result of a mutating call retried with the same idempotency key.
///
/// A plain state machine owned by the server's I/O thread: `begin` on arrival, `finish` when the
/// handler answers. Only final answers are kept; transient failures let a retry run again.
struct IdempotencyCache {
    /// What a retry gets back: the first call's code, message and body.
    struct Outcome: Equatable {
        var code: Int32
        var message: String
        var body: MessageBody
    }

    /// A caller waiting for the first call with its key to finish.
    struct Waiter: Equatable {
        var identity: [[UInt8]]
        var requestID: UInt64
    }

    enum Decision: Equatable {
        /// First time: run the handler.
        case run
        /// Finished before: answer with this.
        case replay(Outcome)
        /// Running now: the caller was queued and is answered by `finish`.
        case wait
    }

    private enum Entry {
        case running([Waiter])
        case done(Outcome, expiresAt: Int64)
    }

    let capacity: Int
    let timeToLiveMilliseconds: Int64
    private var entries: [String: Entry] = [:]
    // Keys of finished entries in finishing order, for eviction of the oldest.
    private var order: [String] = []
    private var orderStart = 0

    init(capacity: Int = 10_000, timeToLiveMilliseconds: Int64 = 10 * 60 * 1000) {
        self.capacity = capacity
        self.timeToLiveMilliseconds = timeToLiveMilliseconds
    }

    var count: Int { entries.count }

    mutating func begin(key: String, waiter: Waiter, now: Int64) -> Decision {
        switch entries[key] {
        case nil:
            entries[key] = .running([])
            return .run
        case .running(var waiters):
            waiters.append(waiter)
            entries[key] = .running(waiters)
            return .wait
        case let .done(outcome, expiresAt):
            if expiresAt > now { return .replay(outcome) }
            entries[key] = .running([])
            return .run
        }
    }

    /// Records the outcome; returns the callers that waited for it. `keep` false forgets the key
    /// (a transient failure: the next retry runs the handler again).
    mutating func finish(key: String, outcome: Outcome, keep: Bool, now: Int64) -> [Waiter] {
        guard case let .running(waiters) = entries[key] else { return [] }
        if keep {
            entries[key] = .done(outcome, expiresAt: now + timeToLiveMilliseconds)
            order.append(key)
            evict(now: now)
        } else {
            entries[key] = nil
        }
        return waiters
    }

    private mutating func evict(now: Int64) {
        while orderStart < order.count {
            let oldest = order[orderStart]
            guard case let .done(_, expiresAt) = entries[oldest] else {
                orderStart += 1  // re-run or forgotten since; its newer entry is further on
                continue
            }
            guard entries.count > capacity || expiresAt <= now else { break }
            entries[oldest] = nil
            orderStart += 1
        }
        if orderStart > 4096 && orderStart * 2 > order.count {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }
}
