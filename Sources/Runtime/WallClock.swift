/// A source of wall-clock time, passed into components that need timestamps so tests can control it.
public protocol WallClock: Sendable {
    /// Milliseconds since the Unix epoch (1970-01-01T00:00:00Z).
    func nowMilliseconds() -> Int64
}
