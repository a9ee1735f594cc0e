import Foundation
@testable import JobQueue
import Proto
import SQLite
import Testing

/// Failures and completions: backoff, dead and given-back jobs, retrying the dead, stale and repeated completions, the errors kept.
extension JobStoreTests {
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
}
