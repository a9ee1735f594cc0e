import JobQueue
import Proto

/// The `cascade` job queue, in items.db: one job per deleted item, enqueued in the delete's
/// transaction, whose payload is the `DeleteImagesForOwnerRequest` to deliver to the image
/// service. item-service runs the jobs itself (`CascadeRunner`) and serves the queue over
/// JobQueue for admin (Stats, ListJobs, GetJob, RetryDead, PauseQueue).
public enum CascadeQueue {
    /// The queue's name on the wire.
    public static let name = JobQueueSpec.cascade.name

    /// Attempts without end (`Int32.max`: one every 10 s for 680 years), 200 ms doubling to a
    /// 10 s cap, ±25 %: the outbox's cadence before it moved onto the job queue. A cascade
    /// must never give up while the image service is down or too old: the item is gone, and
    /// its images would stay for good. Once the image service is back, the next attempt is at
    /// most 10 s away. Jitter, so the deliveries owed across an outage do not all come back in
    /// the same instant.
    public static let retry = JobRetryPolicy(
        maxAttempts: .max, baseDelayMilliseconds: 200, factor: 2, maxDelayMilliseconds: 10_000, jitter: 0.25)

    /// The queue with `retry` (tests pass a faster one). Leases of 60 s, which the runner
    /// extends every 20 s while a delivery runs (a delivery's calls, ListImages pages and
    /// DeleteImagesForOwner, have 10 s deadlines each); a stopping runner gives its job back and
    /// a starting one takes back its own leases at once, so no delivery waits for its lease to
    /// expire. DONE
    /// jobs kept 24 h by default (`JobRetention`): yesterday's deletes can be looked at.
    public static func configuration(retry: JobRetryPolicy = retry, retention: JobRetention = JobRetention()) -> JobQueueConfiguration {
        JobQueueConfiguration(name: name, retry: retry, defaultLeaseMilliseconds: 60_000, retention: retention)
    }

    /// One pending cascade per deleted item.
    static func dedupeKey(_ itemKey: String) -> String { "owner:\(itemKey)" }

    /// The job's payload: the request the image service is sent for the deleted item `owner`,
    /// with the photos that were attached to it and to no other item.
    static func payload(owner: String, attached: [String]) -> [UInt8] {
        var request = DeleteImagesForOwnerRequest()
        request.ownerKey = owner
        request.attachedKeys = attached
        request.ownerDeleted = true
        return request.serializedBytes()
    }
}
