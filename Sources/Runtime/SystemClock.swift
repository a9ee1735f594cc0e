#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real wall clock (`CLOCK_REALTIME`).
public struct SystemClock: WallClock {
    /// Creates the system clock.
    public init() {}

    /// Milliseconds since the Unix epoch, read from `CLOCK_REALTIME`.
    public func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
