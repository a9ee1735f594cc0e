import Foundation

/// When a failed job runs again: exponential backoff with jitter, up to a number of attempts.
///
/// Named apart from RPC's `RetryPolicy` (a client's call retries), which a host imports too.
public struct JobRetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included; a job that fails its last attempt is DEAD.
    public var maxAttempts: Int32
    /// The delay after the first failed attempt.
    public var baseDelayMilliseconds: Int64
    /// Each further failure multiplies the delay by this.
    public var factor: Double
    /// The longest delay, jitter included.
    public var maxDelayMilliseconds: Int64
    /// The delay is moved by up to this fraction either way (0.25: ±25 %), so jobs that failed
    /// together (a restart of what they depend on) do not all come back in the same instant.
    public var jitter: Double

    /// A policy; `maxAttempts` at least 1, `jitter` in 0...1.
    public init(
        maxAttempts: Int32, baseDelayMilliseconds: Int64, factor: Double, maxDelayMilliseconds: Int64, jitter: Double
    ) {
        precondition(maxAttempts >= 1, "maxAttempts must be ≥ 1 (got \(maxAttempts))")
        precondition((0...1).contains(jitter), "jitter must be in 0...1 (got \(jitter))")
        precondition(baseDelayMilliseconds >= 0 && maxDelayMilliseconds >= 0 && factor >= 1, "delays must be ≥ 0, factor ≥ 1")
        self.maxAttempts = maxAttempts
        self.baseDelayMilliseconds = baseDelayMilliseconds
        self.factor = factor
        self.maxDelayMilliseconds = maxDelayMilliseconds
        self.jitter = jitter
    }

    /// 5 attempts, 2 s × 4ⁿ (2 s, 8 s, 32 s, 128 s), ±25 %, capped at 5 min: a job gives up
    /// about three minutes after its first failure. What fails a thumbnail for a while (the
    /// image service restarting, a worker short of memory) is over in seconds; what fails it
    /// for good (a poison image) fails every time, so retrying for days (Sidekiq's 25 attempts
    /// over three weeks) only burns CPU and hides it: it goes DEAD with its history, where
    /// `ListJobs` shows it and `RetryDead` revives it once fixed.
    public static let `default` = JobRetryPolicy(
        maxAttempts: 5, baseDelayMilliseconds: 2000, factor: 4, maxDelayMilliseconds: 300_000, jitter: 0.25)

    /// The delay before the attempt after failed attempt `attempt` (1 = the first), given a
    /// uniform draw `unit` in 0..<1 (0 is the most negative jitter, 0.5 none).
    public func delayMilliseconds(afterAttempt attempt: Int32, unit: Double) -> Int64 {
        let exponent = Double(max(0, attempt - 1))
        let raw = min(Double(maxDelayMilliseconds), Double(baseDelayMilliseconds) * pow(factor, exponent))
        let jittered = raw * (1 + jitter * (2 * unit - 1))
        return min(maxDelayMilliseconds, max(0, Int64(jittered.rounded())))
    }
}
