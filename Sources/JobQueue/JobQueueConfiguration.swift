/// One queue a host serves: its name, retries, leases and how long finished jobs are kept.
public struct JobQueueConfiguration: Sendable, Hashable {
    /// The queue's name on the wire ("thumbnails", "capture").
    public var name: String
    /// Attempts and backoff of its jobs.
    public var retry: JobRetryPolicy
    /// The lease a `Lease` with lease_ms = 0 gets: a dead worker's job is back within it.
    public var defaultLeaseMilliseconds: Int32
    /// DONE jobs are pruned this long after they finished.
    public var doneRetentionMilliseconds: Int64

    /// A queue with the defaults: `JobRetryPolicy.default`, 30 s leases (a worker extends its
    /// lease while it works, so only a dead worker's job waits this long), DONE jobs kept 24 h
    /// (long enough to look at yesterday's batch, short enough that the table stays small).
    public init(
        name: String, retry: JobRetryPolicy = .default, defaultLeaseMilliseconds: Int32 = 30_000,
        doneRetentionMilliseconds: Int64 = 24 * 3600 * 1000
    ) {
        precondition(JobLimits.leaseMilliseconds.contains(defaultLeaseMilliseconds),
            "defaultLeaseMilliseconds must be in \(JobLimits.leaseMilliseconds) (got \(defaultLeaseMilliseconds))")
        self.name = name
        self.retry = retry
        self.defaultLeaseMilliseconds = defaultLeaseMilliseconds
        self.doneRetentionMilliseconds = doneRetentionMilliseconds
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
}
