/// How hard the machine (or cgroup) is pressed for memory.
public enum PressureLevel: Int, Comparable, Sendable, CustomStringConvertible {
    /// No pressure: the whole budget.
    case normal = 0
    /// Shrink to half the budget.
    case warning = 1
    /// Hold nothing.
    case critical = 2

    /// Ordered by severity.
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// "normal", "warning", "critical" (also the purge reasons).
    public var description: String {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}

/// The cache's reaction to memory pressure as a plain state machine (no clocks, no files):
/// each source reports its level; the highest one counts. Rising to warning shrinks the
/// cache to half its budget, rising to critical empties it, and while a level lasts the
/// cache stays within that level's budget (half, or nothing).
public struct PressureStateMachine: Sendable, Equatable {
    /// What the cache must do after an observation.
    public enum Action: Sendable, Equatable {
        case none
        /// Evict down to half the budget.
        case shrinkToHalf
        /// Drop every entry.
        case empty
    }

    /// The last level reported by each source ("psi", "cgroup", …).
    public private(set) var levels: [String: PressureLevel] = [:]

    /// Every source normal.
    public init() {}

    /// The highest level over all sources.
    public var level: PressureLevel { levels.values.max() ?? .normal }

    /// Records `level` from `source` and says what to do.
    public mutating func observe(_ level: PressureLevel, from source: String) -> Action {
        let before = self.level
        levels[source] = level
        let after = self.level
        guard after > before else { return .none }
        return after == .critical ? .empty : .shrinkToHalf
    }

    /// The share of the configured budget the cache may use at the current level.
    public func budget(of configured: Int) -> Int {
        switch level {
        case .normal: configured
        case .warning: configured / 2
        case .critical: 0
        }
    }
}
