import Foundation
import Proto
import SQLite

extension JobStore {
    /// What ``complete(_:now:effect:)`` did.
    public struct Completed: Sendable {
        /// The job, DONE.
        public let job: Job
        /// True when this lease had completed it already: nothing ran or changed again.
        public let repeated: Bool
    }

    /// Completes a RUNNING job under its current lease: runs `effect` (the host's writes that
    /// the result causes, in this same transaction) and keeps what it returns as the job's
    /// result. A lease that is no longer the job's is refused (FAILED_PRECONDITION) before the
    /// effect runs, so a late worker stores nothing twice; a repeat under the lease that
    /// completed it answers the job again and runs nothing. Call inside a write.
    ///
    /// - Parameter effect: Given the job (RUNNING) and the worker's result; a throw rolls the
    ///   completion back with the host's write (the job stays RUNNING under its lease).
    public func complete(
        _ request: CompleteRequest, now: Int64, effect: (Job, [UInt8]) throws -> [UInt8] = { $1 }
    ) throws -> Completed {
        _ = try configuration(request.queue)
        let job = try current(queue: request.queue, jobID: request.jobId)
        if job.state == .done && !request.leaseId.isEmpty && job.leaseId == request.leaseId {
            return Completed(job: job, repeated: true)
        }
        try checkLease(job, request.leaseId, refused: "this worker's result was not stored")
        let result = try effect(job, request.result)
        return Completed(job: try markDone(Int64(job.jobId)!, batch: Int64(job.batchId), result: result, now: now), repeated: false)
    }

    /// Records a failed attempt of a RUNNING job under its current lease and decides what
    /// comes next: `give_back` → QUEUED now, the attempt not counted and no error kept;
    /// `permanent` → DEAD; otherwise QUEUED after `retry_after_ms` or the queue's backoff, or
    /// DEAD when that was its last attempt. Returns the job as it now is. Call inside a write.
    public func fail(_ request: FailRequest, now: Int64) throws -> Job {
        let configuration = try configuration(request.queue)
        guard request.retryAfterMs >= 0 else {
            throw JobStoreError.invalidArgument("retry_after_ms must be ≥ 0 (got \(request.retryAfterMs))")
        }
        let job = try current(queue: request.queue, jobID: request.jobId)
        try checkLease(job, request.leaseId, refused: "this worker's failure was not recorded")
        let id = Int64(job.jobId)!
        if request.giveBack {
            return try jobs(try db.prepare("""
                UPDATE jobs SET state = 1, attempts = attempts - 1, run_at_ms = ?, lease_id = '', lease_expires_at_ms = 0,
                    updated_at_ms = ? WHERE id = ? RETURNING \(Self.columns)
                """), [.integer(now), .integer(now), .integer(id)])[0]
        }
        let worker = request.workerId.isEmpty ? job.workerId : request.workerId
        let message = request.error.isEmpty ? "(the worker gave no message)" : request.error
        try recordError(job: id, attempt: Int64(job.attempts), at: now, worker: worker, message: message)
        if request.permanent || job.attempts >= job.maxAttempts {
            return try markDead(id, batch: Int64(job.batchId), now: now)
        }
        let delay = request.retryAfterMs > 0
            ? Int64(request.retryAfterMs)
            : configuration.retry.delayMilliseconds(afterAttempt: job.attempts, unit: unitDraw())
        return try jobs(try db.prepare("""
            UPDATE jobs SET state = 1, run_at_ms = ?, lease_id = '', lease_expires_at_ms = 0, updated_at_ms = ?
            WHERE id = ? RETURNING \(Self.columns)
            """), [.integer(now + delay), .integer(now), .integer(id)])[0]
    }

    /// Moves the expiry of a RUNNING job's current lease to `now + lease_ms` (0 = the queue's
    /// default) and returns it. Call inside a write.
    public func extend(_ request: ExtendRequest, now: Int64) throws -> Int64 {
        let configuration = try configuration(request.queue)
        let leaseMilliseconds = try leaseMilliseconds(request.leaseMs, configuration)
        let job = try current(queue: request.queue, jobID: request.jobId)
        try checkLease(job, request.leaseId, refused: "the lease was not extended")
        let expiry = now + Int64(leaseMilliseconds)
        try db.execute("UPDATE jobs SET lease_expires_at_ms = ?, updated_at_ms = ? WHERE id = ?",
            [.integer(expiry), .integer(now), .integer(Int64(job.jobId)!)])
        return expiry
    }

    /// Throws FAILED_PRECONDITION, saying what became of the job, unless it is RUNNING under
    /// `leaseID`. A lease past its expiry that no sweep has ended yet still holds: nobody else
    /// can have the job.
    private func checkLease(_ job: Job, _ leaseID: String, refused: String) throws {
        if job.state == .running && !leaseID.isEmpty && job.leaseId == leaseID { return }
        let id = "job \(job.jobId)"
        let expiredAt = try lastExpiry(of: Int64(job.jobId)!).map { " after its lease expired at \(Self.time($0))" } ?? ""
        let what: String
        switch job.state {
        case .running:
            what = expiredAt.isEmpty
                ? "\(id) is held under another lease (by \(job.workerId.isEmpty ? "a worker" : job.workerId))"
                : "\(id) was leased again\(expiredAt) (now held by \(job.workerId.isEmpty ? "a worker" : job.workerId))"
        case .queued:
            what = expiredAt.isEmpty ? "\(id) was given back or failed and is QUEUED again" : "\(id) is QUEUED again\(expiredAt)"
        case .done:
            what = "\(id) was completed under another lease\(expiredAt)"
        default:
            what = "\(id) is DEAD\(expiredAt) (last error: \(job.lastError))"
        }
        let lease = leaseID.isEmpty ? "no lease_id was given" : "lease \(leaseID) is not its current lease"
        throw JobStoreError.staleLease("\(what); \(lease): \(refused)")
    }

    /// When the job's newest failure was an expired lease, that lease's expiry.
    private func lastExpiry(of id: Int64) throws -> Int64? {
        let row = try db.query("SELECT at_ms, message FROM job_errors WHERE job_id = ? ORDER BY id DESC LIMIT 1", [.integer(id)]).first
        guard let row, row[1].stringValue == "lease expired" else { return nil }
        return row[0].int64Value
    }

    /// An instant for messages: "2026-12-01T14:08:46.123Z".
    static func time(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
