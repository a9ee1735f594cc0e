#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on CLOCK_MONOTONIC: for deadlines, pauses and timings that wall-clock jumps
/// cannot move. The one reading of that clock in the suite; the units below derive from it.
@inlinable
public func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Milliseconds on CLOCK_MONOTONIC (see `monotonicNanoseconds()`).
@inlinable
public func monotonicMilliseconds() -> Int64 {
    monotonicNanoseconds() / 1_000_000
}
