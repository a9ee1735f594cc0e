/// Per-call settings.
public struct CallOptions: Sendable {
    /// The call's budget in milliseconds, sent as timeout_ms; past it: DEADLINE_EXCEEDED.
    public var timeoutMilliseconds: UInt32
    /// For mutating calls; nil = a fresh random key per call (so the client's own retries are safe).
    public var idempotencyKey: String?
    /// Sent as RequestHeader.metadata.
    public var metadata: [String: String]
    /// When and how often to retry.
    public var retry: RetryPolicy
    /// How much longer than `timeoutMilliseconds` an attempt waits for its reply, so that the
    /// server's own DEADLINE_EXCEEDED can arrive (docs/protocol.md section 5); 0 = none, the
    /// call then ends locally at its deadline. A reply that does not come within the grace
    /// either is a server that did not answer at all.
    public var replyGraceMilliseconds: UInt32 = 0

    /// Options with a 10 s timeout and the default retry policy.
    public init(
        timeoutMilliseconds: UInt32 = 10_000, idempotencyKey: String? = nil, metadata: [String: String] = [:],
        retry: RetryPolicy = .default
    ) {
        self.timeoutMilliseconds = timeoutMilliseconds
        self.idempotencyKey = idempotencyKey
        self.metadata = metadata
        self.retry = retry
    }
}

/// Retries with jittered exponential backoff, only where a retry cannot apply a change twice:
/// a request that never left this process (no connection), a read-only method, or a mutating
/// method carrying an idempotency key; and RESOURCE_EXHAUSTED with retry_after_ms.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (1 = never retry).
    public var maxAttempts: Int
    /// Backoff before the first retry; doubled each time up to `maxBackoffMilliseconds`.
    public var initialBackoffMilliseconds: Int
    /// The largest backoff.
    public var maxBackoffMilliseconds: Int

    /// A policy.
    public init(maxAttempts: Int, initialBackoffMilliseconds: Int = 50, maxBackoffMilliseconds: Int = 2000) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialBackoffMilliseconds = initialBackoffMilliseconds
        self.maxBackoffMilliseconds = maxBackoffMilliseconds
    }

    /// Four attempts, 50 ms to 2 s backoff.
    public static let `default` = RetryPolicy(maxAttempts: 4)
    /// One attempt.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// "Full jitter" backoff before retry number `retry` (1-based), in milliseconds.
    public func backoff(retry: Int) -> Int {
        let exponent = min(max(retry - 1, 0), 20)
        let ceiling = min(maxBackoffMilliseconds, initialBackoffMilliseconds << exponent)
        return Int.random(in: ceiling / 2...max(ceiling / 2, ceiling))
    }
}
