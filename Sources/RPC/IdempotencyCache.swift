/// Replays the first result of a mutating call retried with the same idempotency key.
///
/// A plain state machine owned by the server's I/O thread: `lookup` on arrival, then `claim`
/// (the call runs) or `wait` (a call with the key is running), and `finish` when the handler
/// answers. Only final answers are kept; transient failures let a retry run again. What is kept
/// is bounded in entries and in bytes (keys, messages and bodies), the oldest evicted first.
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
        /// The waiting call's own deadline, on the monotonic clock.
        var deadline: Int64 = .max
        /// What its reply is counted under (Metrics/Stats).
        var tag: CallTag = .untracked
    }

    enum Lookup: Equatable {
        /// Not known (or expired): the call may claim the key and run.
        case absent
        /// A call with this key is running: a retry waits for it.
        case running
        /// Finished before: answer with this.
        case done(Outcome)
    }

    private enum Entry {
        case running([Waiter])
        case done(Outcome, expiresAt: Int64, sequence: UInt64, bytes: Int)
    }

    /// Bookkeeping of one kept entry beyond its key and outcome (dictionary slot, order entry).
    static let entryOverheadBytes = 64

    let capacity: Int
    let timeToLiveMilliseconds: Int64
    let maxBytes: Int
    private var entries: [String: Entry] = [:]
    /// Finished entries in finishing order, for eviction of the oldest; a key finished again
    /// has a newer sequence number, so its older place is skipped.
    private var order: [(key: String, sequence: UInt64)] = []
    private var orderStart = 0
    private var nextSequence: UInt64 = 0
    /// Finished entries kept, and their bytes.
    private(set) var doneCount = 0
    private(set) var storedBytes = 0
    /// Callers waiting on running keys.
    private(set) var waiterCount = 0

    init(capacity: Int = 10_000, timeToLiveMilliseconds: Int64 = 10 * 60 * 1000, maxBytes: Int = 64 << 20) {
        self.capacity = capacity
        self.timeToLiveMilliseconds = timeToLiveMilliseconds
        self.maxBytes = maxBytes
    }

    /// Entries, running and finished.
    var count: Int { entries.count }

    /// What the key stands for now; a finished entry past its time is forgotten here.
    mutating func lookup(key: String, now: Int64) -> Lookup {
        switch entries[key] {
        case nil:
            return .absent
        case .running:
            return .running
        case let .done(outcome, expiresAt, _, bytes):
            if expiresAt > now { return .done(outcome) }
            forget(key, bytes: bytes)
            return .absent
        }
    }

    /// Marks `key` running: its call was admitted and starts now.
    mutating func claim(key: String) {
        precondition(entries[key] == nil, "claim of a key that is known already")
        entries[key] = .running([])
    }

    /// Queues `waiter` for the running call with `key`; it is answered by `finish`, or by
    /// `expireWaiters` at its own deadline.
    mutating func wait(key: String, _ waiter: Waiter) {
        guard case .running(var waiters) = entries[key] else { preconditionFailure("wait on a key that is not running") }
        waiters.append(waiter)
        entries[key] = .running(waiters)
        waiterCount += 1
    }

    /// Records the outcome; returns the callers that waited for it. `keep` false forgets the key
    /// (a transient failure: the next retry runs the handler again).
    mutating func finish(key: String, outcome: Outcome, keep: Bool, now: Int64) -> [Waiter] {
        guard case let .running(waiters) = entries[key] else { return [] }
        waiterCount -= waiters.count
        if keep {
            let bytes = key.utf8.count + outcome.message.utf8.count + outcome.body.count + Self.entryOverheadBytes
            entries[key] = .done(outcome, expiresAt: now + timeToLiveMilliseconds, sequence: nextSequence, bytes: bytes)
            order.append((key, nextSequence))
            nextSequence += 1
            doneCount += 1
            storedBytes += bytes
            evict(now: now)
        } else {
            entries[key] = nil
        }
        return waiters
    }

    /// Removes and returns the waiters whose own deadline has passed (the running call goes on).
    mutating func expireWaiters(now: Int64) -> [(key: String, waiter: Waiter)] {
        guard waiterCount > 0 else { return [] }
        var expired: [(key: String, waiter: Waiter)] = []
        for (key, entry) in entries {
            guard case let .running(waiters) = entry, waiters.contains(where: { $0.deadline < now }) else { continue }
            var remaining: [Waiter] = []
            for waiter in waiters {
                if waiter.deadline < now { expired.append((key, waiter)) } else { remaining.append(waiter) }
            }
            entries[key] = .running(remaining)
        }
        waiterCount -= expired.count
        return expired
    }

    /// Removes and returns every waiter (the server is stopping); their keys stay running
    /// until their calls finish.
    mutating func takeWaiters() -> [(key: String, waiter: Waiter)] {
        guard waiterCount > 0 else { return [] }
        var taken: [(key: String, waiter: Waiter)] = []
        for (key, entry) in entries {
            guard case let .running(waiters) = entry, !waiters.isEmpty else { continue }
            taken += waiters.map { (key, $0) }
            entries[key] = .running([])
        }
        waiterCount = 0
        return taken
    }

    private mutating func forget(_ key: String, bytes: Int) {
        entries[key] = nil
        doneCount -= 1
        storedBytes -= bytes
    }

    /// Drops the oldest finished entries while there are too many, they take too many bytes,
    /// or their time is up; the newest is always kept, whatever its size.
    private mutating func evict(now: Int64) {
        while orderStart < order.count {
            let oldest = order[orderStart]
            guard case let .done(_, expiresAt, sequence, bytes) = entries[oldest.key], sequence == oldest.sequence else {
                orderStart += 1  // forgotten or finished again since; its newer place is further on
                continue
            }
            guard sequence != nextSequence - 1,
                  doneCount > capacity || storedBytes > maxBytes || expiresAt <= now else { break }
            forget(oldest.key, bytes: bytes)
            orderStart += 1
        }
        if orderStart > 4096 && orderStart * 2 > order.count {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }
}
