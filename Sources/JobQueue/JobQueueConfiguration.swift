import Runtime

/// One queue a host serves: its name, retries, leases, how long finished jobs are kept and
/// what of their payload.
public struct JobQueueConfiguration: Sendable {
    /// Keeps a payload's part that matters once its job ended (DONE or DEAD) and drops the rest
    /// (a capture's inline bytes); nil when there is nothing to drop.
    public typealias PayloadTrim = @Sendable (_ payload: [UInt8]) -> [UInt8]?

    /// The queue's name on the wire ("thumbnails", "capture").
    public var name: String
    /// Attempts and backoff of its jobs.
    public var retry: JobRetryPolicy
    /// The lease a `Lease` with lease_ms = 0 gets: a dead worker's job is back within it.
    public var defaultLeaseMilliseconds: Int32
    /// How long DONE and DEAD jobs and finished batches are kept.
    public var retention: JobRetention
    /// Applied to a job's payload when it ends; nil keeps payloads whole.
    public var trimFinishedPayload: PayloadTrim?

    /// A queue with the defaults: `JobRetryPolicy.default`, 30 s leases (a worker extends its
    /// lease while it works, so only a dead worker's job waits this long), `JobRetention`'s
    /// defaults, payloads kept whole.
    public init(
        name: String, retry: JobRetryPolicy = .default, defaultLeaseMilliseconds: Int32 = 30_000,
        retention: JobRetention = JobRetention(), trimFinishedPayload: PayloadTrim? = nil
    ) {
        precondition(JobLimits.leaseMilliseconds.contains(defaultLeaseMilliseconds),
            "defaultLeaseMilliseconds must be in \(JobLimits.leaseMilliseconds) (got \(defaultLeaseMilliseconds))")
        self.name = name
        self.retry = retry
        self.defaultLeaseMilliseconds = defaultLeaseMilliseconds
        self.retention = retention
        self.trimFinishedPayload = trimFinishedPayload
    }
}

/// How long a service keeps what its queues finished; the sweeper removes the rest in short
/// writes. A retention of ``keep`` keeps them for good.
public struct JobRetention: Sendable, Hashable {
    /// DONE jobs are removed this long after they finished: long enough to look at yesterday's
    /// batch, short enough that the table stays small.
    public var doneMilliseconds: Int64
    /// DEAD jobs, with their error history and payload, this long after they died: a week to
    /// notice, find the cause and RetryDead them.
    public var deadMilliseconds: Int64
    /// Finished batches (GetBatch) this long after their last job finished.
    public var batchMilliseconds: Int64

    /// A retention that keeps for good.
    public static let keep = Int64.max

    public static let defaultDoneMilliseconds: Int64 = 24 * 3600 * 1000
    public static let defaultDeadMilliseconds: Int64 = 7 * 24 * 3600 * 1000
    public static let defaultBatchMilliseconds: Int64 = 7 * 24 * 3600 * 1000

    public init(
        doneMilliseconds: Int64 = defaultDoneMilliseconds, deadMilliseconds: Int64 = defaultDeadMilliseconds,
        batchMilliseconds: Int64 = defaultBatchMilliseconds
    ) {
        self.doneMilliseconds = doneMilliseconds
        self.deadMilliseconds = deadMilliseconds
        self.batchMilliseconds = batchMilliseconds
    }

    /// The flags (and HOMEPWNER_* variables) of a service that hosts queues, in seconds, 0 to keep.
    public static let options: [OptionSpec] = [
        OptionSpec(name: "done-retention", env: EnvironmentNames.jobDoneRetentionSeconds,
                   defaultValue: String(defaultDoneMilliseconds / 1000),
                   help: "seconds a DONE job is kept after it finished (0 = for good)", valueName: "SECONDS"),
        OptionSpec(name: "dead-retention", env: EnvironmentNames.jobDeadRetentionSeconds,
                   defaultValue: String(defaultDeadMilliseconds / 1000),
                   help: "seconds a DEAD job, its errors and payload are kept after it died (0 = for good)", valueName: "SECONDS"),
        OptionSpec(name: "batch-retention", env: EnvironmentNames.jobBatchRetentionSeconds,
                   defaultValue: String(defaultBatchMilliseconds / 1000),
                   help: "seconds a finished batch is kept after its last job finished (0 = for good)", valueName: "SECONDS"),
    ]

    /// Reads the parsed ``options``; refuses a negative value.
    public init(_ options: ParsedOptions) throws {
        self.init(
            doneMilliseconds: try Self.milliseconds(options, "done-retention"),
            deadMilliseconds: try Self.milliseconds(options, "dead-retention"),
            batchMilliseconds: try Self.milliseconds(options, "batch-retention"))
    }

    /// A retention flag in seconds as milliseconds, 0 as ``keep``; refuses a negative value.
    public static func milliseconds(_ options: ParsedOptions, _ name: String) throws -> Int64 {
        let seconds = try options.int(name)
        guard seconds >= 0 else {
            throw OptionError.invalidValue(option: "--\(name)", value: String(seconds), reason: "must be ≥ 0 (0 keeps for good)")
        }
        return seconds == 0 ? keep : Int64(seconds) * 1000
    }

    /// The moment before which what finished is removed; nil when `retention` keeps for good.
    static func cutoff(_ retention: Int64, now: Int64) -> Int64? {
        retention == keep ? nil : now - retention
    }

    /// A retention as JobStats gives it: 0 for kept for good.
    static func wire(_ retention: Int64) -> Int64 {
        retention == keep ? 0 : retention
    }
}

/// The bounds a request is checked against (INVALID_ARGUMENT beyond them, naming the field).
public enum JobLimits {
    /// lease_ms of Lease and Extend (0 = the queue's default): 100 ms to 1 h.
    public static let leaseMilliseconds: ClosedRange<Int32> = 100...3_600_000
    /// max_jobs of one Lease.
    public static let maxJobsPerLease: Int32 = 100
    /// page_size of ListJobs (0 = 100).
    public static let maxPageSize: Int32 = 1000
    /// The default page size of ListJobs.
    public static let defaultPageSize: Int32 = 100
    /// The failed attempts a job keeps: its first and the newest others (a queue without a last
    /// attempt, item-service's cascade, would otherwise grow one row per retry for ever).
    public static let maxErrorsKept = 100
}
