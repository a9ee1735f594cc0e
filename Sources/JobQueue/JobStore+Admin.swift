import Proto
import SQLite

extension JobStore {
    // MARK: Stats and pause

    /// The queue's counts: ready, scheduled and leased from the per-state indexes (small),
    /// done and dead from the counters the triggers keep (a million DONE rows cost nothing).
    public func stats(_ request: JobStatsRequest, now: Int64) throws -> JobStatsResponse {
        let configuration = try configuration(request.queue)
        let queue = SQLiteValue.text(request.queue)
        var counts: [Int64: Int64] = [:]
        for row in try db.query("SELECT state, count FROM job_counts WHERE queue = ?", [queue]) {
            counts[row[0].int64Value!] = row[1].int64Value!
        }
        let ready = try db.query(
            "SELECT count(*), min(run_at_ms) FROM jobs WHERE queue = ? AND state = 1 AND run_at_ms <= ?", [queue, .integer(now)])[0]
        var stats = JobStatsResponse()
        stats.ready = ready[0].int64Value!
        stats.scheduled = (counts[Int64(JobState.queued.rawValue)] ?? 0) - stats.ready
        stats.leased = counts[Int64(JobState.running.rawValue)] ?? 0
        stats.done = counts[Int64(JobState.done.rawValue)] ?? 0
        stats.dead = counts[Int64(JobState.dead.rawValue)] ?? 0
        stats.oldestReadyAgeMs = ready[1].int64Value.map { max(0, now - $0) } ?? 0
        stats.paused = try isPaused(request.queue)
        let retention = configuration.retention
        stats.doneRetentionMs = JobRetention.wire(retention.doneMilliseconds)
        stats.deadRetentionMs = JobRetention.wire(retention.deadMilliseconds)
        stats.batchRetentionMs = JobRetention.wire(retention.batchMilliseconds)
        return stats
    }

    /// Pauses (Lease gives out nothing; running jobs finish) or resumes the queue. Call inside a write.
    public func pause(_ request: PauseQueueRequest) throws -> PauseQueueResponse {
        _ = try configuration(request.queue)
        try db.execute("""
            INSERT INTO job_queues (queue, paused) VALUES (?, ?) ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
            """, [.text(request.queue), .integer(request.paused ? 1 : 0)])
        var response = PauseQueueResponse()
        response.paused = request.paused
        return response
    }

    // MARK: Listing, purging, reviving

    /// Jobs of one state (unspecified = DEAD), newest first, each with its error history;
    /// the page token is the last job id of the page before.
    public func list(_ request: ListJobsRequest) throws -> ListJobsResponse {
        _ = try configuration(request.queue)
        let state = request.state == .unspecified ? JobState.dead : request.state
        guard JobState.allCases.dropFirst().contains(state) else {
            throw JobStoreError.invalidArgument("state must be QUEUED, RUNNING, DONE or DEAD (got \(state.rawValue))")
        }
        guard (0...JobLimits.maxPageSize).contains(request.pageSize) else {
            throw JobStoreError.invalidArgument("page_size must be in 0...\(JobLimits.maxPageSize) (got \(request.pageSize))")
        }
        let size = request.pageSize == 0 ? JobLimits.defaultPageSize : request.pageSize
        var before = Int64.max
        if !request.pageToken.isEmpty {
            guard let token = Int64(request.pageToken), token > 0 else {
                throw JobStoreError.invalidArgument("page_token must be one a ListJobs reply gave (got \"\(request.pageToken)\")")
            }
            before = token
        }
        var jobs = try self.jobs(try db.prepare(Self.listQuery(state: state)), [.text(request.queue), .integer(before), .integer(Int64(size) + 1)])
        var response = ListJobsResponse()
        if jobs.count > Int(size) {
            jobs.removeLast()
            response.nextPageToken = jobs.last!.jobId
        }
        let histories = try errors(of: jobs.map { Int64($0.jobId)! })
        for index in jobs.indices { jobs[index].errors = histories[Int64(jobs[index].jobId)!] ?? [] }
        response.jobs = jobs
        return response
    }

    /// The page ListJobs reads: jobs of `state` with an id below the page token's, newest first.
    /// Parameters: the queue, the id to start below, how many.
    static func listQuery(state: JobState) -> String {
        // The state as a literal, so the index of the jobs by state serves the query.
        "SELECT \(columns) FROM jobs WHERE queue = ? AND state = \(state.rawValue) AND id < ? ORDER BY id DESC LIMIT ?"
    }

    /// Removes DEAD or DONE jobs (unspecified = DEAD), all of that state or only those listed,
    /// with their error history; QUEUED and RUNNING jobs are never purged. Call inside a write.
    public func purge(_ request: PurgeJobsRequest) throws -> PurgeJobsResponse {
        _ = try configuration(request.queue)
        let state = request.state == .unspecified ? JobState.dead : request.state
        guard state == .dead || state == .done else {
            throw JobStoreError.invalidArgument("state must be DEAD or DONE: QUEUED and RUNNING jobs are never purged (got \(state.rawValue))")
        }
        let selection: String
        var params: [SQLiteValue] = [.text(request.queue)]
        if request.jobIds.isEmpty {
            selection = "SELECT id FROM jobs WHERE queue = ? AND state = \(state.rawValue)"
        } else {
            params += try request.jobIds.map { .integer(try jobNumber($0)) }
            let marks = Array(repeating: "?", count: request.jobIds.count).joined(separator: ", ")
            selection = "SELECT id FROM jobs WHERE queue = ? AND state = \(state.rawValue) AND id IN (\(marks))"
        }
        try db.execute("DELETE FROM job_errors WHERE job_id IN (\(selection))", params)
        try db.execute("DELETE FROM jobs WHERE id IN (\(selection))", params)
        var response = PurgeJobsResponse()
        response.purged = Int64(db.changes)
        return response
    }

    /// Puts DEAD jobs (those listed, or all) back in QUEUED, ready now, with their attempts
    /// reset and their error history kept. A job whose dedupe key has a pending job again
    /// stays DEAD (reviving it would make two), and so does one whose payload was trimmed when
    /// it died (it would run without what it needs). Call inside a write.
    public func retryDead(_ request: RetryDeadRequest, now: Int64) throws -> RetryDeadResponse {
        _ = try configuration(request.queue)
        guard request.all != !request.jobIds.isEmpty else {
            throw JobStoreError.invalidArgument("give job_ids or all = true, not \(request.all ? "both" : "neither")")
        }
        let ids: [Int64]
        if request.all {
            ids = try db.query("SELECT id FROM jobs WHERE queue = ? AND state = 4 ORDER BY id", [.text(request.queue)])
                .map { $0[0].int64Value! }
        } else {
            ids = try request.jobIds.map(jobNumber)
        }
        var requeued: Int64 = 0
        for id in ids {
            let revived = try db.query("""
                UPDATE jobs SET state = 1, attempts = 0, run_at_ms = ?, finished_at_ms = NULL, updated_at_ms = ?
                WHERE id = ? AND queue = ? AND state = 4 AND payload_trimmed = 0 AND (dedupe_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM jobs pending WHERE pending.queue = jobs.queue AND pending.dedupe_key = jobs.dedupe_key
                    AND pending.state IN (1, 2)))
                RETURNING batch_id
                """, [.integer(now), .integer(now), .integer(id), .text(request.queue)])
            guard let row = revived.first else { continue }
            requeued += 1
            if let batch = row[0].int64Value {
                try db.execute("UPDATE job_batches SET dead = dead - 1, finished_at_ms = NULL WHERE id = ?", [.integer(batch)])
            }
        }
        var response = RetryDeadResponse()
        response.requeued = requeued
        return response
    }

    /// What ``prune(queue:now:limit:)`` removed.
    public struct Pruned: Sendable, Equatable {
        public var done = 0
        public var dead = 0
        public var batches = 0
        /// The most of one kind: the sweeper prunes again while it is the limit.
        public var most: Int { max(done, dead, batches) }
    }

    /// Removes what the queue keeps past its retention, up to `limit` of each kind, oldest first:
    /// DONE jobs, DEAD jobs (both with their error history), finished batches. Call inside a write.
    /// The sweeper calls it in short writes until no kind reaches `limit`.
    public func prune(queue: String, now: Int64, limit: Int) throws -> Pruned {
        let retention = try configuration(queue).retention
        var pruned = Pruned()
        if let cutoff = JobRetention.cutoff(retention.doneMilliseconds, now: now) {
            pruned.done = try pruneJobs(queue: queue, state: .done, before: cutoff, limit: limit)
        }
        if let cutoff = JobRetention.cutoff(retention.deadMilliseconds, now: now) {
            pruned.dead = try pruneJobs(queue: queue, state: .dead, before: cutoff, limit: limit)
        }
        if let cutoff = JobRetention.cutoff(retention.batchMilliseconds, now: now) {
            // finished_at_ms is NULL while a job of the batch is pending.
            try db.execute("""
                DELETE FROM job_batches WHERE id IN (SELECT id FROM job_batches
                    WHERE queue = ? AND finished_at_ms IS NOT NULL AND finished_at_ms < ? ORDER BY finished_at_ms LIMIT ?)
                """, [.text(queue), .integer(cutoff), .integer(Int64(limit))])
            pruned.batches = db.changes
        }
        return pruned
    }

    /// Removes up to `limit` jobs of the queue in `state` (DONE or DEAD, each with its partial
    /// index on finished_at_ms) that finished before `cutoff`, oldest first, with their errors.
    private func pruneJobs(queue: String, state: JobState, before cutoff: Int64, limit: Int) throws -> Int {
        let selection = """
            SELECT id FROM jobs WHERE queue = ? AND state = \(state.rawValue) AND finished_at_ms < ? ORDER BY finished_at_ms LIMIT ?
            """
        let params: [SQLiteValue] = [.text(queue), .integer(cutoff), .integer(Int64(limit))]
        try db.execute("DELETE FROM job_errors WHERE job_id IN (\(selection))", params)
        try db.execute("DELETE FROM jobs WHERE id IN (\(selection))", params)
        return db.changes
    }

    // MARK: Batches

    /// A new, empty batch of the queue (finished until a job joins it); returns its id. Call
    /// inside the write that enqueues its jobs.
    public func createBatch(queue: String, now: Int64) throws -> String {
        _ = try configuration(queue)
        try db.execute("INSERT INTO job_batches (queue, created_at_ms, finished_at_ms) VALUES (?, ?, ?)",
            [.text(queue), .integer(now), .integer(now)])
        return String(db.lastInsertRowID)
    }

    /// The batch's counters, what is pending and its rate (jobs finished per second since it
    /// was created, until it finished).
    public func batch(_ request: GetBatchRequest, now: Int64) throws -> JobBatch {
        _ = try configuration(request.queue)
        let id = try batchNumber(request.batchId, queue: request.queue)
        let row = try db.query(
            "SELECT total, done, dead, created_at_ms, finished_at_ms FROM job_batches WHERE id = ?", [.integer(id)])[0]
        var batch = JobBatch()
        batch.batchId = String(id)
        batch.queue = request.queue
        batch.total = row[0].int64Value!
        batch.done = row[1].int64Value!
        batch.dead = row[2].int64Value!
        batch.pending = batch.total - batch.done - batch.dead
        batch.createdAtMs = row[3].int64Value!
        batch.finishedAtMs = row[4].int64Value ?? 0
        let end = batch.finishedAtMs > 0 ? batch.finishedAtMs : now
        let seconds = Double(end - batch.createdAtMs) / 1000
        batch.ratePerSecond = seconds > 0 ? Double(batch.done + batch.dead) / seconds : 0
        return batch
    }

    /// A batch id of this queue as its row number; NOT_FOUND when there is none.
    func batchNumber(_ batchID: String, queue: String) throws -> Int64 {
        guard let id = Int64(batchID), id > 0 else {
            throw JobStoreError.invalidArgument("batch_id must be a batch number, as the enqueue gave it (got \"\(batchID)\")")
        }
        guard try db.scalar("SELECT 1 FROM job_batches WHERE id = ? AND queue = ?", [.integer(id), .text(queue)]) != nil else {
            throw JobStoreError.notFound("queue \(queue) has no batch \(batchID)")
        }
        return id
    }

    /// One more job in the batch: it is unfinished again.
    func addToBatch(_ batch: Int64) throws {
        try db.execute("UPDATE job_batches SET total = total + 1, finished_at_ms = NULL WHERE id = ?", [.integer(batch)])
    }

    /// A job of the batch finished (`column` "done" or "dead"); the last one finishes the batch.
    func countFinished(_ batch: Int64, column: String, now: Int64) throws {
        try db.execute("""
            UPDATE job_batches SET \(column) = \(column) + 1,
                finished_at_ms = CASE WHEN done + dead + 1 >= total THEN ? ELSE NULL END WHERE id = ?
            """, [.integer(now), .integer(batch)])
    }

    /// A job id of a request as its row number.
    func jobNumber(_ jobID: String) throws -> Int64 {
        guard let id = Int64(jobID), id > 0 else {
            throw JobStoreError.invalidArgument("job_ids must hold job numbers, as Lease and ListJobs give them (got \"\(jobID)\")")
        }
        return id
    }
}

extension JobStore {
    /// The jobs of `queue` leased now (RUNNING with a lease that has not expired), payloads
    /// included: what a host checks a worker's calls against (a capture worker attaches only
    /// what a capture job it holds made). As many as there are workers' slots, so no paging.
    public func leased(queue: String, now: Int64) throws -> [Job] {
        try jobs(
            try db.prepare(
                "SELECT \(Self.columns) FROM jobs WHERE queue = ? AND state = ? AND lease_expires_at_ms > ? ORDER BY id"),
            [.text(queue), .integer(Int64(JobState.running.rawValue)), .integer(now)])
    }
}
