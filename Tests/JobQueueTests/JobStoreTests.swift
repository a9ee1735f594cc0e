import Foundation
@testable import JobQueue
import Proto
import SQLite
import Testing

/// The queue as a state machine: a real SQLite file, an injected clock (each call's `now`)
/// and an injected random source; no sockets, no sleeps.
@Suite struct JobStoreTests {
    let folder: TemporaryFolder
    let host: TestHost

    init() throws {
        folder = try TemporaryFolder()
        host = try TestHost(path: folder.path + "/host.db")
    }

    @Test func aJobIsEnqueuedLeasedAndCompleted() throws {
        defer { folder.remove() }
        let enqueued = try host.enqueue("photo-1", now: 1000)
        #expect(enqueued.created && enqueued.job.jobId == "1" && enqueued.job.state == .queued)
        #expect(enqueued.job.runAtMs == 1000 && enqueued.job.maxAttempts == 5 && enqueued.job.payload == Array("photo-1".utf8))

        let leased = try host.lease(worker: "w1", now: 2000)
        let job = try #require(leased.jobs.first)
        #expect(job.state == .running && job.attempts == 1 && job.workerId == "w1")
        #expect(job.leaseId.count == 32 && job.leaseId.allSatisfy(\.isHexDigit))
        #expect(job.leaseExpiresAtMs == 2000 + 30_000)
        #expect(try host.lease(worker: "w2", now: 2001).jobs.isEmpty)

        let completed = try host.complete(job, result: "thumbs", now: 3000)
        #expect(!completed.repeated && completed.job.state == .done && completed.job.result == Array("thumbs".utf8))
        #expect(try host.get("1").state == .done)
        #expect(try host.stats(now: 3000).done == 1)
        #expect(try host.lease(now: 4000).jobs.isEmpty)
    }

    @Test func jobIDsAreNeverReused() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        try host.enqueue(now: 0)
        var purge = PurgeJobsRequest()
        purge.queue = "thumbnails"
        for job in try host.lease(max: 2, now: 0).jobs { try host.fail(job, permanent: true, now: 1) }
        #expect(try host.write { try host.jobs.purge(purge) }.purged == 2)
        #expect(try host.enqueue(now: 2).job.jobId == "3")
    }

    @Test func aPendingKeyReturnsTheExistingJobAndAfterDoneANewOneIsMade() throws {
        defer { folder.remove() }
        let first = try host.enqueue("a", key: "image:k:64", now: 0)
        let again = try host.enqueue("b", key: "image:k:64", now: 1)
        #expect(!again.created && again.job.jobId == first.job.jobId && again.job.payload == Array("a".utf8))
        #expect(try host.enqueue(key: "image:other:64", now: 1).created)

        let running = try #require(try host.lease(now: 2).jobs.first)
        #expect(running.jobId == first.job.jobId)
        let whileRunning = try host.enqueue(key: "image:k:64", now: 3)
        #expect(!whileRunning.created && whileRunning.job.state == .running)

        try host.complete(running, now: 4)
        let afterDone = try host.enqueue(key: "image:k:64", now: 5)
        #expect(afterDone.created && afterDone.job.jobId != first.job.jobId)
    }

    @Test func anExpiredLeaseIsQueuedAgainWithLeaseExpiredInItsHistoryAndDeadWhenOutOfAttempts() throws {
        defer { folder.remove() }
        let twoAttempts = try TestHost(path: folder.path + "/two.db", queues: [JobQueueConfiguration(
            name: "thumbnails", retry: JobRetryPolicy(maxAttempts: 2, baseDelayMilliseconds: 10, factor: 2, maxDelayMilliseconds: 100, jitter: 0))])
        try twoAttempts.enqueue(now: 0)
        let first = try #require(try twoAttempts.lease(worker: "w1", leaseMs: 1000, now: 0).jobs.first)
        #expect(try twoAttempts.write { try twoAttempts.jobs.requeueExpired(queue: "thumbnails", now: 999) }.requeued == 0)
        #expect(try twoAttempts.write { try twoAttempts.jobs.requeueExpired(queue: "thumbnails", now: 1000) }.requeued == 1)
        let queued = try twoAttempts.get(first.jobId)
        #expect(queued.state == .queued && queued.attempts == 1 && queued.lastError == "lease expired" && queued.runAtMs == 1000)
        #expect(queued.errors.map(\.message) == ["lease expired"])
        #expect(queued.errors.first?.attempt == 1 && queued.errors.first?.workerId == "w1" && queued.errors.first?.atMs == 1000)

        // Lease ends the expired leases of its queue before it picks: a dead worker's job is
        // back within one lease without the sweeper.
        _ = try #require(try twoAttempts.lease(worker: "w2", leaseMs: 1000, now: 1500).jobs.first)
        let leasedAgain = try twoAttempts.lease(worker: "w3", now: 2500)
        #expect(leasedAgain.jobs.isEmpty)
        #expect(leasedAgain.expired.dead.map(\.jobId) == [first.jobId])
        let dead = try twoAttempts.get(first.jobId)
        #expect(dead.state == .dead && dead.attempts == 2)
        #expect(dead.errors.map(\.workerId) == ["w1", "w2"] && dead.errors.map(\.attempt) == [1, 2])
        #expect(dead.errors.map(\.atMs) == [1000, 2500])
    }

    @Test func extendKeepsALongJobFromBeingSwept() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        let job = try #require(try host.lease(leaseMs: 1000, now: 0).jobs.first)
        var extend = ExtendRequest()
        extend.queue = "thumbnails"
        extend.jobId = job.jobId
        extend.leaseId = job.leaseId
        extend.leaseMs = 1000
        #expect(try host.write { try host.jobs.extend(extend, now: 800) } == 1800)
        #expect(try host.write { try host.jobs.requeueExpired(queue: "thumbnails", now: 1500) }.requeued == 0)
        #expect(try host.get(job.jobId).state == .running)
        #expect(try host.complete(job, now: 1700).job.state == .done)

        extend.leaseId = "not-the-lease"
        #expect(jobError { try host.write { try host.jobs.extend(extend, now: 1800) } }?.rpcStatus == .failedPrecondition)
    }

    @Test func backoffRunAtFollowsThePolicyWithJitterFromTheInjectedSourceAndHonoursTheCap() throws {
        defer { folder.remove() }
        let policy = JobRetryPolicy(maxAttempts: 5, baseDelayMilliseconds: 2000, factor: 4, maxDelayMilliseconds: 100_000, jitter: 0.25)
        // A lease draws two values (its id), a failure one: the third of each cycle is the jitter.
        let cases: [(draw: UInt64, delays: [Int64])] = [
            (0, [1500, 6000, 24_000, 75_000]),  // -25 %; the cap (100 s) bounds the raw 128 s first
            (1 << 63, [2000, 8000, 32_000, 100_000]),  // no jitter
            (UInt64.max, [2500, 10_000, 40_000, 100_000]),  // +25 %, never past the cap
        ]
        for (index, test) in cases.enumerated() {
            let store = try TestHost(
                path: folder.path + "/backoff\(index).db", queues: [JobQueueConfiguration(name: "thumbnails", retry: policy)],
                random: CyclingGenerator(values: [1, 2, test.draw]))
            try store.enqueue(now: 0)
            var now: Int64 = 10_000
            for delay in test.delays {
                let job = try #require(try store.lease(now: now).jobs.first)
                let failed = try store.fail(job, now: now)
                #expect(failed.state == .queued && failed.runAtMs == now + delay, "draw \(test.draw), attempt \(job.attempts)")
                #expect(try store.lease(now: now + delay - 1).jobs.isEmpty)
                now += delay
            }
            let last = try #require(try store.lease(now: now).jobs.first)
            #expect(last.attempts == 5)
            #expect(try store.fail(last, now: now).state == .dead)
            #expect(try store.get(last.jobId).errors.count == 5)
        }
        try host.enqueue(now: 0)
        let job = try #require(try host.lease(now: 0).jobs.first)
        #expect(try host.fail(job, retryAfterMs: 777, now: 50).runAtMs == 827)
    }

    @Test func aPermanentFailureIsDeadAtOnce() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        let job = try #require(try host.lease(worker: "w9", now: 0).jobs.first)
        let dead = try host.fail(job, error: "not a JPEG", permanent: true, now: 10)
        #expect(dead.state == .dead && dead.attempts == 1 && dead.lastError == "not a JPEG")
        let stored = try host.get(job.jobId)
        #expect(stored.errors.count == 1 && stored.errors[0].message == "not a JPEG" && stored.errors[0].workerId == "w9")
        #expect(try host.stats(now: 10).dead == 1)
    }

    @Test func giveBackQueuesTheJobAtOnceWithoutCountingAnAttempt() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        let job = try #require(try host.lease(now: 0).jobs.first)
        let back = try host.fail(job, error: "stopping", permanent: true, giveBack: true, now: 500)
        #expect(back.state == .queued && back.attempts == 0 && back.runAtMs == 500 && back.lastError.isEmpty && back.leaseId.isEmpty)
        #expect(try host.get(job.jobId).errors.isEmpty)
        #expect(try host.lease(now: 500).jobs.first?.attempts == 1)
    }

    @Test func retryDeadRevivesListedOrAllJobsWithAttemptsResetAndHistoryKept() throws {
        defer { folder.remove() }
        for key in ["a", "b", "c"] { try host.enqueue(key: key, now: 0) }
        for job in try host.lease(max: 3, now: 0).jobs { try host.fail(job, error: "bad \(job.jobId)", permanent: true, now: 1) }
        // A new job for c is pending: reviving the dead c would make two.
        try host.enqueue(key: "c", now: 2)

        var retry = RetryDeadRequest()
        retry.queue = "thumbnails"
        #expect(jobError { try host.write { try host.jobs.retryDead(retry, now: 3) } } == .invalidArgument("give job_ids or all = true, not neither"))
        retry.jobIds = ["1"]
        #expect(try host.write { try host.jobs.retryDead(retry, now: 3) }.requeued == 1)
        let revived = try host.get("1")
        #expect(revived.state == .queued && revived.attempts == 0 && revived.runAtMs == 3)
        #expect(revived.errors.map(\.message) == ["bad 1"] && revived.lastError == "bad 1")

        retry.jobIds = []
        retry.all = true
        #expect(try host.write { try host.jobs.retryDead(retry, now: 4) }.requeued == 1)
        #expect(try host.get("2").state == .queued && host.get("3").state == .dead)
    }

    @Test func aStaleCompletionIsRefusedChangesNothingAndRunsNoEffect() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        let stale = try #require(try host.lease(worker: "w1", leaseMs: 1000, now: 0).jobs.first)
        let current = try #require(try host.lease(worker: "w2", leaseMs: 1000, now: 1000).jobs.first)
        #expect(current.jobId == stale.jobId && current.leaseId != stale.leaseId)
        let before = try host.get(stale.jobId)
        let effects = Counter()
        let refused = jobError {
            try host.complete(stale, now: 1100) { _, result in
                effects.bump()
                _ = try host.insertThing("thumbnail")
                return result
            }
        }
        #expect(refused == .staleLease(
            "job 1 was leased again after its lease expired at 1970-01-01T00:00:01.000Z (now held by w2); lease \(stale.leaseId) is not its current lease: this worker's result was not stored"))
        #expect(try effects.count == 0 && host.count("things") == 0)
        #expect(try host.get(stale.jobId) == before)
        let failRefused = jobError { try host.fail(stale, now: 1100) }
        #expect(failRefused?.rpcMessage.hasSuffix("this worker's failure was not recorded") == true)
        #expect(try host.get(stale.jobId) == before)

        // DONE under the other lease: refused too, saying so.
        try host.complete(current, now: 1200)
        let late = jobError { try host.complete(stale, now: 1300) }
        #expect(late?.rpcMessage.hasPrefix("job 1 was completed under another lease") == true)
        #expect(late?.rpcStatus == .failedPrecondition)
    }

    @Test func aRepeatedCompletionUnderTheSameLeaseIsAnsweredAgainWithoutRunningTheEffect() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        let job = try #require(try host.lease(now: 0).jobs.first)
        let effects = Counter()
        let effect: (Job, [UInt8]) throws -> [UInt8] = { _, result in
            effects.bump()
            _ = try host.insertThing("thumbnail")
            return result + [1]
        }
        let first = try host.complete(job, result: "r", now: 10, effect: effect)
        let again = try host.complete(job, result: "other", now: 20, effect: effect)
        #expect(!first.repeated && again.repeated)
        #expect(try effects.count == 1 && host.count("things") == 1)
        #expect(again.job == first.job && again.job.result == Array("r".utf8) + [1])
    }

    @Test func aPausedQueueLeasesNothingUntilResumed() throws {
        defer { folder.remove() }
        try host.enqueue(now: 0)
        var pause = PauseQueueRequest()
        pause.queue = "thumbnails"
        pause.paused = true
        #expect(try host.write { try host.jobs.pause(pause) }.paused)
        let paused = try host.lease(now: 10)
        #expect(paused.jobs.isEmpty && paused.nextDueAtMs == nil)
        #expect(try host.stats(now: 10).paused && host.stats(now: 10).ready == 1)
        #expect(try !host.jobs.hasReadyJob(queue: "thumbnails", now: 10))
        pause.paused = false
        #expect(try !host.write { try host.jobs.pause(pause) }.paused)
        #expect(try host.lease(now: 20).jobs.count == 1)
    }

    @Test func batchCountersFollowTheirJobsAndAPendingJobJoinsOnlyWhenInNoBatch() throws {
        defer { folder.remove() }
        let other = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 0) }
        try host.enqueue(key: "in-other", batch: other, now: 0)
        try host.enqueue(key: "loose", now: 0)
        let batch = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 1000) }
        var get = GetBatchRequest()
        get.queue = "thumbnails"
        get.batchId = batch
        #expect(try host.jobs.batch(get, now: 1000).finishedAtMs == 1000)  // empty: finished

        #expect(try host.enqueue(key: "new", batch: batch, now: 1000).inBatch)
        let loose = try host.enqueue(key: "loose", batch: batch, now: 1000)
        #expect(!loose.created && loose.inBatch && loose.job.batchId == batch)
        let elsewhere = try host.enqueue(key: "in-other", batch: batch, now: 1000)
        #expect(!elsewhere.created && !elsewhere.inBatch && elsewhere.job.batchId == other)
        var progress = try host.jobs.batch(get, now: 1000)
        #expect(progress.total == 2 && progress.pending == 2 && progress.finishedAtMs == 0)

        let leased = try host.lease(max: 3, now: 2000).jobs.filter { $0.batchId == batch }
        #expect(leased.count == 2)
        try host.complete(leased[0], now: 3000)
        progress = try host.jobs.batch(get, now: 3000)
        #expect(progress.done == 1 && progress.pending == 1 && progress.ratePerSecond == 0.5)
        try host.fail(leased[1], permanent: true, now: 5000)
        progress = try host.jobs.batch(get, now: 9000)
        #expect(progress.done == 1 && progress.dead == 1 && progress.pending == 0 && progress.finishedAtMs == 5000)
        #expect(progress.ratePerSecond == 0.5)

        get.batchId = "99"
        #expect(jobError { try host.jobs.batch(get, now: 0) } == .notFound("queue thumbnails has no batch 99"))
    }

    @Test func doneJobsPastRetentionArePrunedInBoundedChunks() throws {
        defer { folder.remove() }
        let day: Int64 = 24 * 3600 * 1000
        try host.write {
            for index in 0..<2600 {
                _ = try host.jobs.enqueue(queue: "thumbnails", payload: [], now: 0)
                var request = LeaseRequest()
                request.queue = "thumbnails"
                let leased = try host.jobs.lease(request, now: 0).jobs[0]
                _ = try host.jobs.complete(completeRequest(leased), now: index < 2500 ? 1000 : day + 1000)
            }
        }
        let commits = host.db.commitCount
        var chunks: [Int] = []
        var pruned = 1000
        while pruned == 1000 {
            pruned = try host.write { try host.jobs.prune(queue: "thumbnails", now: day + 2000, limit: 1000).done }
            chunks.append(pruned)
        }
        #expect(chunks == [1000, 1000, 500])
        #expect(host.db.commitCount - commits == 3)
        #expect(try host.stats(now: day + 2000).done == 100 && host.count("jobs") == 100)
    }

    @Test func deadJobsWithTheirErrorsAndFinishedBatchesArePrunedPastTheirRetention() throws {
        defer { folder.remove() }
        let hour: Int64 = 3600 * 1000
        let queue = JobQueueConfiguration(
            name: "thumbnails", retention: JobRetention(doneMilliseconds: hour, deadMilliseconds: 2 * hour, batchMilliseconds: 3 * hour))
        let host = try TestHost(path: folder.path + "/retention.db", queues: [queue])
        defer { try? host.close() }
        let batch = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 0) }
        try host.enqueue("dies", key: "a", batch: batch, now: 0)
        try host.fail(try host.lease(now: 0).jobs[0], permanent: true, now: 10)
        // A job still pending keeps its batch however old.
        let open = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 0) }
        try host.enqueue("waits", key: "b", batch: open, now: 0)
        func prune(at now: Int64) throws -> JobStore.Pruned {
            try host.write { try host.jobs.prune(queue: "thumbnails", now: now, limit: 1000) }
        }
        #expect(try prune(at: 2 * hour) == JobStore.Pruned())
        #expect(try prune(at: 2 * hour + 11) == JobStore.Pruned(done: 0, dead: 1, batches: 0))
        #expect(try host.count("job_errors") == 0 && host.count("jobs") == 1)
        #expect(try prune(at: 3 * hour + 11) == JobStore.Pruned(done: 0, dead: 0, batches: 1))
        var get = GetBatchRequest()
        get.queue = "thumbnails"
        get.batchId = batch
        #expect(jobError { try host.jobs.batch(get, now: 0) } == .notFound("queue thumbnails has no batch \(batch)"))
        get.batchId = open
        #expect(try host.jobs.batch(get, now: 0).pending == 1)
        // Kept for good: nothing goes, however old.
        let forever = JobRetention(doneMilliseconds: JobRetention.keep, deadMilliseconds: JobRetention.keep, batchMilliseconds: JobRetention.keep)
        let keeper = try TestHost(path: folder.path + "/keep.db", queues: [JobQueueConfiguration(name: "thumbnails", retention: forever)])
        defer { try? keeper.close() }
        try keeper.fail(try { try keeper.enqueue(now: 0); return try keeper.lease(now: 0).jobs[0] }(), permanent: true, now: 0)
        #expect(try keeper.write { try keeper.jobs.prune(queue: "thumbnails", now: .max / 2, limit: 10) } == JobStore.Pruned())
    }

    @Test func aJobKeepsItsFirstFailureAndItsNewestUpToTheLimit() throws {
        defer { folder.remove() }
        let endless = JobQueueConfiguration(
            name: "thumbnails", retry: JobRetryPolicy(maxAttempts: .max, baseDelayMilliseconds: 1, factor: 1, maxDelayMilliseconds: 1, jitter: 0))
        let host = try TestHost(path: folder.path + "/endless.db", queues: [endless])
        defer { try? host.close() }
        try host.enqueue(now: 0)
        for attempt in 1...150 {
            let now = Int64(attempt) * 10
            try host.fail(try host.lease(now: now).jobs[0], error: "try \(attempt)", now: now)
        }
        let errors = try host.get("1").errors
        #expect(errors.count == JobLimits.maxErrorsKept)
        #expect(errors.first?.message == "try 1" && errors.dropFirst().first?.message == "try 52" && errors.last?.message == "try 150")
    }

    @Test func aFinishedJobsPayloadIsTrimmedAndATrimmedDeadJobIsNotRevived() throws {
        defer { folder.remove() }
        // Drops all but the first byte, as the capture queue drops a capture's inline bytes.
        let trimming = JobQueueConfiguration(name: "thumbnails", trimFinishedPayload: { $0.count > 1 ? Array($0.prefix(1)) : nil })
        let host = try TestHost(path: folder.path + "/trim.db", queues: [trimming])
        defer { try? host.close() }
        try host.enqueue("done: 8 MiB inline", now: 0)
        try host.complete(try host.lease(now: 0).jobs[0], now: 1)
        try host.enqueue("dead: 8 MiB inline", now: 0)
        try host.fail(try host.lease(now: 0).jobs[0], permanent: true, now: 1)
        try host.enqueue("x", now: 0)
        try host.fail(try host.lease(now: 0).jobs[0], permanent: true, now: 1)
        #expect(try ["1", "2", "3"].map { String(decoding: try host.get($0).payload, as: UTF8.self) } == ["d", "d", "x"])
        var retry = RetryDeadRequest()
        retry.queue = "thumbnails"
        retry.all = true
        // The job whose payload lost bytes would run without them: it stays DEAD.
        #expect(try host.write { try host.jobs.retryDead(retry, now: 2) }.requeued == 1)
        #expect(try host.get("2").state == .dead && host.get("3").state == .queued)
    }

    @Test func statsCountEveryStateAndTheOldestReadyAge() throws {
        defer { folder.remove() }
        for _ in 0..<4 { try host.enqueue(now: 1000) }
        try host.enqueue(runAt: 60_000, now: 1000)  // scheduled
        let leased = try host.lease(max: 3, now: 2000).jobs
        try host.complete(leased[0], now: 2500)
        try host.fail(leased[1], permanent: true, now: 2500)
        let stats = try host.stats(now: 5000)
        #expect(stats.ready == 1 && stats.scheduled == 1 && stats.leased == 1 && stats.done == 1 && stats.dead == 1)
        #expect(stats.oldestReadyAgeMs == 4000 && !stats.paused && stats.doneRetentionMs == 24 * 3600 * 1000)
        #expect(stats.deadRetentionMs == 7 * 24 * 3600 * 1000 && stats.batchRetentionMs == 7 * 24 * 3600 * 1000)
    }

    @Test func aHostWriteThatFailsAfterItsEnqueueLeavesNeitherItsRowNorTheJob() throws {
        defer { folder.remove() }
        struct CrashBetweenTheWrites: Error {}
        #expect(throws: CrashBetweenTheWrites.self) {
            try host.write {
                _ = try host.insertThing("original")
                _ = try host.jobs.enqueue(queue: "thumbnails", payload: [1], dedupeKey: "image:1", now: 0)
                throw CrashBetweenTheWrites()
            }
        }
        #expect(try host.count("things") == 0 && host.count("jobs") == 0)
        let stats = try host.stats(now: 0)
        #expect(stats.ready == 0 && stats.scheduled == 0)
        // The counters rolled back with the job: the next enqueue of the key is a new job.
        #expect(try host.enqueue(key: "image:1", now: 1).created)
    }

    @Test func leaseTakesTheOldestRunAtFirstAndChecksItsFields() throws {
        defer { folder.remove() }
        try host.enqueue("late", runAt: 300, now: 0)
        try host.enqueue("early", runAt: 100, now: 0)
        try host.enqueue("middle", runAt: 200, now: 0)
        try host.enqueue("tie", runAt: 100, now: 0)
        let jobs = try host.lease(max: 3, now: 1000).jobs
        #expect(jobs.map { String(decoding: $0.payload, as: UTF8.self) } == ["early", "tie", "middle"])
        #expect(Set(jobs.map(\.leaseId)).count == 3)

        #expect(jobError { try host.lease(max: 101, now: 0) } == .invalidArgument("max_jobs must be in 0...100 (got 101)"))
        #expect(jobError { try host.lease(leaseMs: 50, now: 0) }?.rpcMessage.contains("lease_ms must be") == true)
        var request = LeaseRequest()
        request.queue = "capture"
        #expect(jobError { try host.jobs.lease(request, now: 0) }
            == .notFound("queue \"capture\" is not served here; this endpoint serves: thumbnails"))
        #expect(jobError { try host.get("42") } == .notFound("queue thumbnails has no job 42"))
        #expect(jobError { try host.get("x") }?.rpcStatus == .invalidArgument)
    }

    @Test func listJobsPagesNewestFirstAndPurgeTakesOnlyTheListedJobsOfItsState() throws {
        defer { folder.remove() }
        for _ in 0..<5 { try host.enqueue(now: 0) }
        for job in try host.lease(max: 5, now: 0).jobs { try host.fail(job, permanent: true, now: 1) }
        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.pageSize = 2
        var pages: [[String]] = []
        repeat {
            let page = try host.jobs.list(list)
            pages.append(page.jobs.map(\.jobId))
            #expect(page.jobs.allSatisfy { $0.errors.count == 1 })
            list.pageToken = page.nextPageToken
        } while !list.pageToken.isEmpty
        #expect(pages == [["5", "4"], ["3", "2"], ["1"]])
        list.pageToken = "zz"
        #expect(jobError { try host.jobs.list(list) }?.rpcStatus == .invalidArgument)

        var purge = PurgeJobsRequest()
        purge.queue = "thumbnails"
        purge.jobIds = ["2", "4"]
        #expect(try host.write { try host.jobs.purge(purge) }.purged == 2)
        purge.state = .done
        purge.jobIds = ["1"]
        #expect(try host.write { try host.jobs.purge(purge) }.purged == 0)
        #expect(try host.stats(now: 2).dead == 3 && host.count("job_errors") == 3)
    }

    @Test func migrateIsRepeatableAndLeavesTheHostsSchemaAlone() throws {
        defer { folder.remove() }
        try host.db.setUserVersion(7)
        try host.enqueue(now: 0)
        try JobStore.migrate(host.db)
        #expect(try host.db.userVersion == 7 && host.count("jobs") == 1 && host.count("things") == 0)
        #expect(try host.db.scalar("SELECT version FROM job_queue_schema")?.int64Value == Int64(JobStore.schemaVersion))
    }

    @Test func listJobsOfEveryStateWalksAnIndexNewestFirstWithoutSortingTheState() throws {
        defer { folder.remove() }
        for state in JobState.allCases.dropFirst() {
            let plan = try host.db.query(
                "EXPLAIN QUERY PLAN " + JobStore.listQuery(state: state), [.text("thumbnails"), .integer(Int64.max), .integer(101)]
            ).map { $0["detail"]?.stringValue ?? "" }
            // A temporary B-tree would sort every job of the state, a million DONE ones, per page.
            #expect(plan.count == 1 && plan[0].contains("USING INDEX") && !plan.contains { $0.contains("TEMP B-TREE") },
                "\(state): \(plan)")
        }
    }

    @Test func leaseReadsOnlyTheIndexOfQueuedJobs() throws {
        defer { folder.remove() }
        let plan = try host.db.query(
            "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE queue = ? AND state = 1 AND run_at_ms <= ? ORDER BY run_at_ms, id LIMIT ?",
            [.text("thumbnails"), .integer(0), .integer(1)]).map { $0["detail"]?.stringValue ?? "" }
        #expect(plan.count == 1 && plan[0].contains("INDEX jobs_ready"), "\(plan)")
    }
}
