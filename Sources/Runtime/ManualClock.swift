import Locking

/// A wall clock that only moves when told to, for tests.
public final class ManualClock: WallClock {
    /// The current time in milliseconds since the Unix epoch.
    private let milliseconds: Locked<Int64>

    /// Creates a clock showing `milliseconds` since the Unix epoch.
    ///
    /// - Parameter milliseconds: The initial time; defaults to the epoch.
    public init(milliseconds: Int64 = 0) {
        self.milliseconds = Locked(milliseconds)
    }

    /// The time the clock currently shows.
    public func nowMilliseconds() -> Int64 {
        milliseconds.withLock { $0 }
    }

    /// Moves the clock forward (or backward, for a negative amount).
    ///
    /// - Parameter milliseconds: How far to move the clock.
    public func advance(by milliseconds: Int64) {
        self.milliseconds.withLock { $0 += milliseconds }
    }
}
