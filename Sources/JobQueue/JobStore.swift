import Foundation
import Proto
import SQLite

/// The jobs of the queues a host serves, in the host's own SQLite database: every state
/// transition (QUEUED → RUNNING → DONE, or DEAD) as a plain method over SQL.
///
/// **Every method that changes something must run inside a write transaction the host
/// opened** (`try transactions.write { try jobs.enqueue(…) }`, or inside the host's own row
/// insert, so the job commits or rolls back with the change that caused it). Used on the
/// thread of the host's `DatabaseOwner`, like its connection. Time comes in as `now`
/// (milliseconds since the epoch) and randomness (lease ids, jitter) from the generator given
/// at init, so the state machine runs in tests without sockets or sleeps.
///
/// Waiting Lease calls are woken by `JobQueueService`; a host that enqueues in a write of its
/// own calls `JobQueueService.jobsReady(queue:)` after that write commits.
public final class JobStore {
    /// The host's connection.
    public let db: Database
    /// The queues served, by name.
    public let queues: [String: JobQueueConfiguration]
    private var random: any RandomNumberGenerator
    private let insertJob: Statement
    private let selectJob: Statement
    private let selectPending: Statement
    private let selectReady: Statement
    private let leaseJob: Statement
    private let completeJob: Statement
    private let insertError: Statement
    private let selectPaused: Statement

    /// The columns `job(at:)` reads, in order.
    static let columns = """
        id, queue, state, payload, attempts, max_attempts, run_at_ms, lease_id, lease_expires_at_ms, worker_id, \
        last_error, dedupe_key, batch_id, result, created_at_ms, updated_at_ms
        """

    /// A store over `db`, whose tables ``migrate(_:)`` has made, serving `queues`.
    ///
    /// - Parameter random: Draws lease ids and backoff jitter; tests pass a seeded one.
    public init(
        db: Database, queues: [JobQueueConfiguration], random: any RandomNumberGenerator = SystemRandomNumberGenerator()
    ) throws {
        precondition(!queues.isEmpty, "a JobStore serves at least one queue")
        self.db = db
        self.queues = Dictionary(queues.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.random = random
        insertJob = try db.prepare("""
            INSERT INTO jobs (queue, state, payload, max_attempts, run_at_ms, dedupe_key, batch_id, created_at_ms, updated_at_ms)
            VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?) RETURNING \(Self.columns)
            """)
        selectJob = try db.prepare("SELECT \(Self.columns) FROM jobs WHERE id = ? AND queue = ?")
        selectPending = try db.prepare(
            "SELECT \(Self.columns) FROM jobs WHERE queue = ? AND dedupe_key = ? AND state IN (1, 2)")
        selectReady = try db.prepare(
            "SELECT id FROM jobs WHERE queue = ? AND state = 1 AND run_at_ms <= ? ORDER BY run_at_ms, id LIMIT ?")
        leaseJob = try db.prepare("""
            UPDATE jobs SET state = 2, attempts = attempts + 1, lease_id = ?, lease_expires_at_ms = ?, worker_id = ?,
                updated_at_ms = ? WHERE id = ? RETURNING \(Self.columns)
            """)
        completeJob = try db.prepare("""
            UPDATE jobs SET state = 3, result = ?, finished_at_ms = ?, updated_at_ms = ? WHERE id = ? RETURNING \(Self.columns)
            """)
        insertError = try db.prepare(
            "INSERT INTO job_errors (job_id, attempt, at_ms, worker_id, message) VALUES (?, ?, ?, ?, ?)")
        selectPaused = try db.prepare("SELECT paused FROM job_queues WHERE queue = ?")
    }

    // MARK: Enqueue

    /// What ``enqueue(queue:payload:dedupeKey:batchID:runAtMs:maxAttempts:now:)`` did.
    public struct Enqueued: Sendable {
        /// The new job, or the pending one with the same dedupe key.
        public let job: Job
        /// False when a job with the key was QUEUED or RUNNING already: that one is `job`.
        public let created: Bool
        /// Whether the job now counts in the batch asked for: a new job does; a pending one
        /// does when it was in no batch yet (it joins this one), not when it is in another.
        public let inBatch: Bool
    }

    /// Adds a QUEUED job, or returns the pending job with the same `dedupeKey`. Call inside
    /// the host's write (the transaction of the change that causes the job).
    ///
    /// - Parameters:
    ///   - dedupeKey: Jobs with the same key, QUEUED or RUNNING, are one job; nil for none.
    ///   - batchID: A batch of this queue from ``createBatch(queue:now:)``.
    ///   - runAtMs: When it becomes ready; nil for now.
    ///   - maxAttempts: nil for the queue's retry policy.
    public func enqueue(
        queue: String, payload: [UInt8], dedupeKey: String? = nil, batchID: String? = nil, runAtMs: Int64? = nil,
        maxAttempts: Int32? = nil, now: Int64
    ) throws -> Enqueued {
        let configuration = try self.configuration(queue)
        let batch = try batchID.map { try batchNumber($0, queue: queue) }
        if let dedupeKey, var existing = try jobs(selectPending, [.text(queue), .text(dedupeKey)]).first {
            var joined = false
            if let batch, existing.batchId.isEmpty {
                try db.execute("UPDATE jobs SET batch_id = ? WHERE id = ?", [.integer(batch), .integer(Int64(existing.jobId)!)])
                try addToBatch(batch)
                existing.batchId = String(batch)
                joined = true
            }
            return Enqueued(job: existing, created: false, inBatch: joined || (batch != nil && existing.batchId == String(batch!)))
        }
        let job = try jobs(insertJob, [
            .text(queue), .blob(payload), .integer(Int64(maxAttempts ?? configuration.retry.maxAttempts)),
            .integer(runAtMs ?? now), dedupeKey.map { .text($0) } ?? .null, batch.map { .integer($0) } ?? .null,
            .integer(now), .integer(now),
        ])[0]
        if let batch { try addToBatch(batch) }
        return Enqueued(job: job, created: true, inBatch: batch != nil)
    }

    // MARK: Lease

    /// What ``lease(_:now:)`` did.
    public struct Leased: Sendable {
        /// The jobs leased, oldest run_at first.
        public var jobs: [Job] = []
        /// What requeuing the queue's expired leases first did.
        public var expired = Expired()
        /// When nothing was leased: the earliest moment one may be (a QUEUED job's run_at, a
        /// lease's expiry); nil when the queue is paused or holds no pending job.
        public var nextDueAtMs: Int64?
    }

    /// Requeues the queue's expired leases, then leases up to max_jobs ready jobs (oldest
    /// run_at first, then id) to the worker; a paused queue leases nothing. Call inside a write.
    public func lease(_ request: LeaseRequest, now: Int64) throws -> Leased {
        let configuration = try self.configuration(request.queue)
        guard (0...JobLimits.maxJobsPerLease).contains(request.maxJobs) else {
            throw JobStoreError.invalidArgument("max_jobs must be in 0...\(JobLimits.maxJobsPerLease) (got \(request.maxJobs))")
        }
        let leaseMilliseconds = try self.leaseMilliseconds(request.leaseMs, configuration)
        var leased = Leased()
        leased.expired = try requeueExpired(queue: request.queue, now: now)
        guard try !isPaused(request.queue) else { return leased }
        try selectReady.bind([.text(request.queue), .integer(now), .integer(Int64(max(1, request.maxJobs)))])
        var ids: [Int64] = []
        while try selectReady.step() { ids.append(selectReady.int64(at: 0)!) }
        for id in ids {
            let leaseID = newLeaseID()
            leased.jobs += try jobs(leaseJob, [
                .text(leaseID), .integer(now + Int64(leaseMilliseconds)), .text(request.workerId), .integer(now), .integer(id),
            ])
        }
        if leased.jobs.isEmpty { leased.nextDueAtMs = try nextDue(queue: request.queue) }
        return leased
    }

    /// Whether a Lease now would find a job: the queue is not paused and a QUEUED job is due.
    public func hasReadyJob(queue: String, now: Int64) throws -> Bool {
        guard try !isPaused(queue) else { return false }
        return try db.scalar(
            "SELECT 1 FROM jobs WHERE queue = ? AND state = 1 AND run_at_ms <= ? LIMIT 1", [.text(queue), .integer(now)]) != nil
    }

    /// The earliest run_at of a QUEUED job or expiry of a RUNNING one; nil when there is none.
    func nextDue(queue: String) throws -> Int64? {
        let ready = try db.scalar("SELECT min(run_at_ms) FROM jobs WHERE queue = ? AND state = 1", [.text(queue)])?.int64Value
        let expiry = try db.scalar(
            "SELECT min(lease_expires_at_ms) FROM jobs WHERE queue = ? AND state = 2", [.text(queue)])?.int64Value
        return [ready, expiry].compactMap { $0 }.min()
    }

    /// Makes the queue's QUEUED jobs whose run_at is later than `latest` due at `now`; returns
    /// how many. For a queue whose jobs wait only for its backoff (the host enqueues none for
    /// later), a run_at further off than the longest delay means the wall clock went back,
    /// and the job must not wait for it to catch up. Call inside a write.
    public func pullIn(queue: String, runAtAfter latest: Int64, now: Int64) throws -> Int {
        _ = try configuration(queue)
        try db.execute(
            "UPDATE jobs SET run_at_ms = ?, updated_at_ms = ? WHERE queue = ? AND state = 1 AND run_at_ms > ?",
            [.integer(now), .integer(now), .text(queue), .integer(latest)])
        return db.changes
    }

    /// What ``requeueExpired(queue:now:limit:)`` did.
    public struct Expired: Sendable {
        /// Jobs put back in QUEUED.
        public var requeued = 0
        /// Jobs that were out of attempts, now DEAD (for `job.dead`).
        public var dead: [Job] = []
    }

    /// Ends every lease of the queue that expired by `now` (up to `limit`): each counts as a
    /// failed attempt with the error "lease expired", at the lease's expiry and by the worker
    /// that held it; the job is QUEUED at once, or DEAD when out of attempts. Call inside a write.
    public func requeueExpired(queue: String, now: Int64, limit: Int = 1000) throws -> Expired {
        let rows = try db.query("""
            SELECT id, attempts, max_attempts, lease_expires_at_ms, worker_id, batch_id FROM jobs
            WHERE queue = ? AND state = 2 AND lease_expires_at_ms <= ? ORDER BY lease_expires_at_ms LIMIT ?
            """, [.text(queue), .integer(now), .integer(Int64(limit))])
        var expired = Expired()
        for row in rows {
            let id = row[0].int64Value!, attempts = row[1].int64Value!
            try recordError(job: id, attempt: attempts, at: row[3].int64Value!, worker: row[4].stringValue!, message: "lease expired")
            if attempts >= row[2].int64Value! {
                expired.dead.append(try markDead(id, batch: row[5].int64Value, now: now))
            } else {
                try db.execute("""
                    UPDATE jobs SET state = 1, run_at_ms = ?, lease_id = '', lease_expires_at_ms = 0, updated_at_ms = ? WHERE id = ?
                    """, [.integer(now), .integer(now), .integer(id)])
                expired.requeued += 1
            }
        }
        return expired
    }

    // MARK: Reading

    /// The job with its error history; NOT_FOUND when the queue holds no such job.
    public func job(_ request: GetJobRequest) throws -> Job {
        _ = try configuration(request.queue)
        var job = try current(queue: request.queue, jobID: request.jobId)
        job.errors = try errors(of: Int64(job.jobId)!)
        return job
    }

    /// Runs `body`, whose queries then see one snapshot of the database: in a read transaction
    /// of its own, or in the transaction already open (a writer's batch).
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        guard db.isAutocommit else { return try body() }
        return try db.inTransaction(.deferred, body)
    }

    /// The job as stored (without its error history).
    func current(queue: String, jobID: String) throws -> Job {
        guard let id = Int64(jobID), id > 0 else {
            throw JobStoreError.invalidArgument("job_id must be a job number, as Lease and ListJobs give it (got \"\(jobID)\")")
        }
        guard let job = try jobs(selectJob, [.integer(id), .text(queue)]).first else {
            throw JobStoreError.notFound("queue \(queue) has no job \(jobID)")
        }
        return job
    }

    /// Every failed attempt of a job, oldest first.
    func errors(of id: Int64) throws -> [JobAttemptError] {
        try errors(of: [id])[id] ?? []
    }

    /// The failed attempts of several jobs in one query, oldest first, by job id (jobs with none
    /// are left out).
    func errors(of ids: [Int64]) throws -> [Int64: [JobAttemptError]] {
        guard !ids.isEmpty else { return [:] }
        let marks = Array(repeating: "?", count: ids.count).joined(separator: ",")
        var errors: [Int64: [JobAttemptError]] = [:]
        for row in try db.query(
            "SELECT job_id, attempt, at_ms, worker_id, message FROM job_errors WHERE job_id IN (\(marks)) ORDER BY job_id, id",
            ids.map { .integer($0) })
        {
            var error = JobAttemptError()
            error.attempt = Int32(row[1].int64Value!)
            error.atMs = row[2].int64Value!
            error.workerId = row[3].stringValue!
            error.message = row[4].stringValue!
            errors[row[0].int64Value!, default: []].append(error)
        }
        return errors
    }

    /// The rows `statement` (selecting ``columns``) gives for `params`, as jobs.
    func jobs(_ statement: Statement, _ params: [SQLiteValue]) throws -> [Job] {
        try statement.bind(params)
        var jobs: [Job] = []
        while try statement.step() { jobs.append(Self.job(at: statement)) }
        return jobs
    }

    /// The job in the statement's current row (``columns`` order).
    static func job(at row: Statement) -> Job {
        var job = Job()
        job.jobId = String(row.int64(at: 0)!)
        job.queue = row.string(at: 1)!
        job.state = JobState(rawValue: Int32(row.int64(at: 2)!))
        job.payload = row.blob(at: 3) ?? []
        job.attempts = Int32(row.int64(at: 4)!)
        job.maxAttempts = Int32(row.int64(at: 5)!)
        job.runAtMs = row.int64(at: 6)!
        job.leaseId = row.string(at: 7)!
        job.leaseExpiresAtMs = row.int64(at: 8)!
        job.workerId = row.string(at: 9)!
        job.lastError = row.string(at: 10)!
        job.dedupeKey = row.string(at: 11) ?? ""
        job.batchId = row.int64(at: 12).map { String($0) } ?? ""
        job.result = row.blob(at: 13) ?? []
        job.createdAtMs = row.int64(at: 14)!
        job.updatedAtMs = row.int64(at: 15)!
        return job
    }

    // MARK: Shared steps

    /// The configuration of a queue served here; NOT_FOUND naming those served otherwise.
    func configuration(_ queue: String) throws -> JobQueueConfiguration {
        guard let configuration = queues[queue] else { throw JobStoreError.unknownQueue(queue, served: queues.keys) }
        return configuration
    }

    /// lease_ms checked (0 = the queue's default).
    func leaseMilliseconds(_ requested: Int32, _ configuration: JobQueueConfiguration) throws -> Int32 {
        if requested == 0 { return configuration.defaultLeaseMilliseconds }
        guard JobLimits.leaseMilliseconds.contains(requested) else {
            throw JobStoreError.invalidArgument(
                "lease_ms must be 0 (the queue's default, \(configuration.defaultLeaseMilliseconds)) or in \(JobLimits.leaseMilliseconds) (got \(requested))")
        }
        return requested
    }

    /// Whether Lease gives out nothing from this queue.
    func isPaused(_ queue: String) throws -> Bool {
        try selectPaused.bind([.text(queue)])
        // Reset at once: a statement left on its row would keep a read open on the connection.
        defer { try? selectPaused.reset() }
        return try selectPaused.step() && selectPaused.int64(at: 0) != 0
    }

    /// Keeps a failed attempt in the job's history and mirrors it in last_error; past
    /// `JobLimits.maxErrorsKept` the oldest but the first goes.
    func recordError(job: Int64, attempt: Int64, at: Int64, worker: String, message: String) throws {
        try insertError.bind([.integer(job), .integer(attempt), .integer(at), .text(worker), .text(message)])
        while try insertError.step() {}
        try db.execute("UPDATE jobs SET last_error = ? WHERE id = ?", [.text(message), .integer(job)])
        if try db.scalar("SELECT count(*) FROM job_errors WHERE job_id = ?", [.integer(job)])!.int64Value! > Int64(JobLimits.maxErrorsKept) {
            try db.execute("""
                DELETE FROM job_errors WHERE id = (SELECT id FROM job_errors WHERE job_id = ? ORDER BY id LIMIT 1 OFFSET 1)
                """, [.integer(job)])
        }
    }

    /// The job as it ended (DONE or DEAD), its payload trimmed as its queue says.
    private func trimmed(_ job: Job) throws -> Job {
        guard let trim = queues[job.queue]?.trimFinishedPayload, let kept = trim(job.payload) else { return job }
        try db.execute("UPDATE jobs SET payload = ?, payload_trimmed = 1 WHERE id = ?", [.blob(kept), .integer(Int64(job.jobId)!)])
        var job = job
        job.payload = kept
        return job
    }

    /// Marks a job DEAD (the lease ended) and counts it in its batch.
    func markDead(_ id: Int64, batch: Int64?, now: Int64) throws -> Job {
        let job = try jobs(try db.prepare("""
            UPDATE jobs SET state = 4, lease_id = '', lease_expires_at_ms = 0, finished_at_ms = ?, updated_at_ms = ?
            WHERE id = ? RETURNING \(Self.columns)
            """), [.integer(now), .integer(now), .integer(id)])[0]
        if let batch { try countFinished(batch, column: "dead", now: now) }
        return try trimmed(job)
    }

    /// Marks a RUNNING job DONE with `result` and counts it in its batch.
    func markDone(_ id: Int64, batch: Int64?, result: [UInt8], now: Int64) throws -> Job {
        let job = try jobs(completeJob, [.blob(result), .integer(now), .integer(now), .integer(id)])[0]
        if let batch { try countFinished(batch, column: "done", now: now) }
        return try trimmed(job)
    }

    /// A fresh lease id: 128 random bits in hex.
    private func newLeaseID() -> String {
        let high = random.next(), low = random.next()
        return hex(high) + hex(low)
    }

    /// A uniform draw in 0..<1 (53 random bits), for jitter.
    func unitDraw() -> Double {
        Double(random.next() >> 11) * 0x1p-53
    }
}

/// Sixteen hex digits, zero-padded.
private func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

@available(*, unavailable, message: "A JobStore belongs to its database's owner")
extension JobStore: Sendable {}
