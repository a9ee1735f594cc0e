import Runtime
import Locking

/// What `CacheStats` reports.
public struct CacheStatistics: Sendable, Equatable {
    /// Blobs and renditions held.
    public var entries: Int
    /// Their bytes (with a small per-entry overhead).
    public var bytes: Int
    /// The budget in force now (halved under warning, zero under critical pressure).
    public var budgetBytes: Int
    /// The budget without pressure.
    public var configuredBudgetBytes: Int
    /// Lookups answered from memory.
    public var hits: Int64
    /// Lookups that went to disk.
    public var misses: Int64
    /// Entries dropped to stay within the budget (LRU or purges).
    public var evictions: Int64
    /// Purges by reason: "warning", "critical" (the level) and "manual", "psi", "cgroup" (the source).
    public var purges: [String: Int64]
    /// The memory-pressure level in force.
    public var level: PressureLevel
}

/// An in-memory LRU over blob and rendition bytes with a byte budget that yields to memory pressure.
///
/// It never holds the only copy of anything: every entry is also on disk.
public final class ImageCache: Sendable {
    private struct State {
        var lru = LRUCache()
        var pressure = PressureStateMachine()
        var hits: Int64 = 0
        var misses: Int64 = 0
        var evictions: Int64 = 0
        var purges: [String: Int64] = [:]
        /// Bumped by every `remove(prefix:)`: an image row read before a removal must not be
        /// attached to bytes cached after it (the image may be gone).
        var removals: UInt64 = 0
    }

    /// The configured budget in bytes.
    public let budgetBytes: Int
    private let state = Locked(State())
    private let trimAfterPurge: Bool

    /// A cache of at most `budgetBytes`; `trimAfterPurge` hands freed memory back to the OS (malloc_trim).
    public init(budgetBytes: Int, trimAfterPurge: Bool = true) {
        precondition(budgetBytes >= 0, "cache budget must be ≥ 0 (got \(budgetBytes))")
        self.budgetBytes = budgetBytes
        self.trimAfterPurge = trimAfterPurge
    }

    /// The bytes under `key`, counting a hit or a miss.
    public func get(_ key: String) -> [UInt8]? {
        state.withLock { state in
            if let value = state.lru.get(key) {
                state.hits += 1
                return value
            }
            state.misses += 1
            return nil
        }
    }

    /// Caches `value` unless it is larger than a quarter of the budget in force.
    public func insert(_ key: String, _ value: [UInt8]) {
        insert(key, value, image: nil, ticket: 0)
    }

    /// A ticket for `insert(_:_:image:ticket:)`, taken before the image's row is read.
    func removalTicket() -> UInt64 { state.withLock { $0.removals } }

    /// Caches `value`, the whole bytes of `image`, so that `image(_:)` finds them by the image key;
    /// when anything was removed since `ticket`, the bytes are cached by `key` only.
    func insert(_ key: String, _ value: [UInt8], image: StoredImage?, ticket: UInt64) {
        state.withLock { state in
            let budget = state.pressure.budget(of: budgetBytes)
            guard LRUCache.cost(key: key, value: value) <= budget / 4 else { return }
            let attached = state.removals == ticket ? image : nil
            state.evictions += Int64(state.lru.insert(key, value, image: attached, budget: budget))
        }
    }

    /// The row and whole bytes of image `imageKey` when cached (a hit); nil otherwise, without
    /// counting a miss (the caller goes on to the index and `get`).
    func image(_ imageKey: String) -> (image: StoredImage, encodedInfo: [UInt8], bytes: [UInt8])? {
        state.withLock { state in
            guard let found = state.lru.image(imageKey) else { return nil }
            state.hits += 1
            return found
        }
    }

    /// Drops every entry whose key starts with `prefix` (an image and its renditions).
    public func remove(prefix: String) {
        state.withLock { state in
            state.removals &+= 1
            for key in state.lru.keys(where: { $0.hasPrefix(prefix) }) { state.lru.remove(key) }
        }
    }

    /// Shrinks to half the budget (warning) or empties (critical), counting the level and `reason`.
    @discardableResult
    public func purge(_ level: PressureLevel, reason: String) -> (freedBytes: Int, entries: Int, bytes: Int) {
        let result = state.withLock { state in
            let limit = level == .critical ? 0 : min(state.lru.bytes, state.pressure.budget(of: budgetBytes) / 2)
            let (evicted, freed) = state.lru.trim(to: level == .warning ? limit : 0)
            state.evictions += Int64(evicted)
            state.purges[level.description, default: 0] += 1
            if reason != level.description { state.purges[reason, default: 0] += 1 }
            return (freed, state.lru.count, state.lru.bytes)
        }
        if trimAfterPurge, result.0 > 0 { releaseFreedMemory() }
        return result
    }

    /// Feeds a monitor's reading into the pressure state machine and applies its action.
    public func observe(_ level: PressureLevel, from source: String) {
        let action = state.withLock { $0.pressure.observe(level, from: source) }
        switch action {
        case .none: break
        case .shrinkToHalf: purge(.warning, reason: source)
        case .empty: purge(.critical, reason: source)
        }
    }

    /// Counters and sizes now.
    public var statistics: CacheStatistics {
        state.withLock { state in
            CacheStatistics(
                entries: state.lru.count, bytes: state.lru.bytes, budgetBytes: state.pressure.budget(of: budgetBytes),
                configuredBudgetBytes: budgetBytes, hits: state.hits, misses: state.misses,
                evictions: state.evictions, purges: state.purges, level: state.pressure.level)
        }
    }

    /// Returns freed heap pages to the operating system so the process's RSS falls.
    private func releaseFreedMemory() {
        MallocTuning.releaseFreedMemory()
    }
}
