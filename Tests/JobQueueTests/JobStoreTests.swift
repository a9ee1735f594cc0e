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

    @Test func leaseReadsOnlyTheIndexOfQueuedJobs() throws {
        defer { folder.remove() }
        let plan = try host.db.query(
            "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE queue = ? AND state = 1 AND run_at_ms <= ? ORDER BY run_at_ms, id LIMIT ?",
            [.text("thumbnails"), .integer(0), .integer(1)]).map { $0["detail"]?.stringValue ?? "" }
        #expect(plan.count == 1 && plan[0].contains("INDEX jobs_ready"), "\(plan)")
    }
}
