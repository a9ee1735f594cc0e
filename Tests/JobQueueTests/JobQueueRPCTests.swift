import Foundation
@testable import JobQueue
import Proto
import RPC
import RPCTestSupport
import Runtime
import SQLite
import Locking
import Testing
import TestSupport
import ZMQ

/// Every JobQueue method over a real ZeroMQ socket, with its error statuses.
@Suite struct JobQueueRPCTests {
    @Test func everyMethodAnswersOverTheSocket() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let client = fixture.client
        let batch = try #require(try await fixture.enqueue(3, batch: true))
        let jobs = try await client.call(JobQueueRPC.lease, leaseRequest(max: 3)).jobs
        #expect(jobs.count == 3 && jobs.allSatisfy { $0.state == .running && $0.batchId == batch })

        var extend = ExtendRequest()
        extend.queue = "thumbnails"
        extend.jobId = jobs[0].jobId
        extend.leaseId = jobs[0].leaseId
        extend.leaseMs = 60_000
        #expect(try await client.call(JobQueueRPC.extend, extend).leaseExpiresAtMs > jobs[0].leaseExpiresAtMs)

        _ = try await client.call(JobQueueRPC.complete, completeRequest(jobs[0], result: "thumbs"), options: QueueFixture.patient)
        _ = try await client.call(JobQueueRPC.complete, completeRequest(jobs[0], result: "thumbs"), options: QueueFixture.patient)
        #expect(fixture.effects.count == 1)
        // The first committed what it staged; the repeat wrote nothing.
        #expect(fixture.finishes.all == [true, false])
        #expect(try await fixture.owner.perform { try $0.count("things") } == 1)
        // An hour: it stays scheduled however slowly the rest of the test runs.
        #expect(try await client.call(JobQueueRPC.fail, failRequest(jobs[1], retryAfterMs: 3_600_000)).state == .queued)
        #expect(try await client.call(JobQueueRPC.fail, failRequest(jobs[2], permanent: true)).state == .dead)

        var get = GetJobRequest()
        get.queue = "thumbnails"
        get.jobId = jobs[0].jobId
        let done = try await client.call(JobQueueRPC.getJob, get)
        #expect(done.state == .done && done.result == Array("thumbs!".utf8))

        var statsRequest = JobStatsRequest()
        statsRequest.queue = "thumbnails"
        let stats = try await client.call(JobQueueRPC.stats, statsRequest)
        #expect(stats.done == 1 && stats.dead == 1 && stats.scheduled == 1 && stats.leased == 0 && stats.ready == 0)

        var list = ListJobsRequest()
        list.queue = "thumbnails"
        let dead = try await client.call(JobQueueRPC.listJobs, list).jobs
        #expect(dead.map(\.jobId) == [jobs[2].jobId] && dead[0].errors.map(\.message) == ["decode failed"])

        var getBatch = GetBatchRequest()
        getBatch.queue = "thumbnails"
        getBatch.batchId = batch
        let progress = try await client.call(JobQueueRPC.getBatch, getBatch)
        #expect(progress.total == 3 && progress.done == 1 && progress.dead == 1 && progress.pending == 1)

        var retry = RetryDeadRequest()
        retry.queue = "thumbnails"
        retry.jobIds = [jobs[2].jobId]
        #expect(try await client.call(JobQueueRPC.retryDead, retry).requeued == 1)

        var pause = PauseQueueRequest()
        pause.queue = "thumbnails"
        pause.paused = true
        #expect(try await client.call(JobQueueRPC.pauseQueue, pause).paused)
        #expect(try await client.call(JobQueueRPC.lease, leaseRequest()).jobs.isEmpty)
        pause.paused = false
        #expect(try await !client.call(JobQueueRPC.pauseQueue, pause).paused)
        #expect(try await client.call(JobQueueRPC.lease, leaseRequest()).jobs.map(\.jobId) == [jobs[2].jobId])

        var purge = PurgeJobsRequest()
        purge.queue = "thumbnails"
        purge.state = .done
        #expect(try await client.call(JobQueueRPC.purgeJobs, purge).purged == 1)

        #expect(fixture.events.all.map(\.topic) == [EventTopic.jobDone, EventTopic.jobDead])
        #expect(fixture.events.all.map(\.event.jobId) == [jobs[0].jobId, jobs[2].jobId])
        #expect(fixture.events.all[1].event.error == "decode failed")
    }

    @Test func listJobsStatsGetJobAndGetBatchAnswerWhileTheWriterIsBusy() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let client = fixture.client
        let batch = try #require(try await fixture.enqueue(3, batch: true))
        try await fixture.ready()
        // The writer's thread held by a write that waits (as a long commit or a slow disk would):
        // the reads must not queue behind it.
        let release = DispatchSemaphore(value: 0)
        let entered = Locked(false)
        let held = Task { [owner = fixture.owner] in
            try await owner.perform { _ in
                entered.withLock { $0 = true }
                release.wait()
            }
        }
        defer { release.signal() }
        #expect(try await eventually { entered.withLock { $0 } })
        let options = CallOptions(timeoutMilliseconds: 5000, retry: .none)
        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.state = .queued
        let queued = try await client.call(JobQueueRPC.listJobs, list, options: options).jobs
        #expect(queued.count == 3)
        var stats = JobStatsRequest()
        stats.queue = "thumbnails"
        #expect(try await client.call(JobQueueRPC.stats, stats, options: options).ready == 3)
        var get = GetJobRequest()
        get.queue = "thumbnails"
        get.jobId = try #require(queued.first).jobId
        #expect(try await client.call(JobQueueRPC.getJob, get, options: options).state == .queued)
        var getBatch = GetBatchRequest()
        getBatch.queue = "thumbnails"
        getBatch.batchId = batch
        #expect(try await client.call(JobQueueRPC.getBatch, getBatch, options: options).pending == 3)
        release.signal()
        try await held.value
    }

    @Test func aWriteTheDatabaseHasNoRoomForIsAnsweredDiskFullAndChangesNothing() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.enqueue()
        let job = try #require(try await fixture.client.call(JobQueueRPC.lease, leaseRequest()).jobs.first)
        // The database may not grow past its size now: a 1 MiB result has no room (SQLITE_FULL).
        try await fixture.owner.perform { host in
            let pages = try host.db.scalar("PRAGMA page_count")!.int64Value!
            try host.db.execute("PRAGMA max_page_count = \(pages)")
        }
        let large = String(repeating: "x", count: 1 << 20)
        let full = await rpcError { try await fixture.client.call(JobQueueRPC.complete, completeRequest(job, result: large), options: QueueFixture.patient) }
        #expect(full?.code == .resourceExhausted && full?.reason == RPCError.diskFullReason && full?.retryAfterMilliseconds == 0,
            "\(String(describing: full))")
        #expect(full?.message.contains("the disk is full") == true, "\(String(describing: full))")
        var get = GetJobRequest()
        get.queue = "thumbnails"
        get.jobId = job.jobId
        #expect(try await fixture.client.call(JobQueueRPC.getJob, get).state == .running)
        #expect(try await fixture.owner.perform { try $0.count("things") } == 0)

        try await fixture.owner.perform { host in try host.db.execute("PRAGMA max_page_count = 1073741823") }
        _ = try await fixture.client.call(JobQueueRPC.complete, completeRequest(job, result: large), options: QueueFixture.patient)
        #expect(try await fixture.client.call(JobQueueRPC.getJob, get).state == .done)
    }

    @Test func badCallsGetPreciseStatusesAndMessages() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let client = fixture.client
        let unknown = await rpcError { try await client.call(JobQueueRPC.lease, leaseRequest("capture")) }
        #expect(unknown?.code == .notFound && unknown?.message == "queue \"capture\" is not served here; this endpoint serves: thumbnails")
        let wait = await rpcError { try await client.call(JobQueueRPC.lease, leaseRequest(waitMs: -1)) }
        #expect(wait?.code == .invalidArgument && wait?.message == "wait_ms must be ≥ 0 (got -1)")
        let max = await rpcError { try await client.call(JobQueueRPC.lease, leaseRequest(max: 1000)) }
        #expect(max?.code == .invalidArgument && max?.message.contains("max_jobs") == true)
        let lease = await rpcError { try await client.call(JobQueueRPC.lease, leaseRequest(leaseMs: 10)) }
        #expect(lease?.code == .invalidArgument && lease?.message.contains("lease_ms") == true)

        var get = GetJobRequest()
        get.queue = "thumbnails"
        get.jobId = "999"
        let missing = await rpcError { try await client.call(JobQueueRPC.getJob, get) }
        #expect(missing?.code == .notFound && missing?.message == "queue thumbnails has no job 999")
        var statsRequest = JobStatsRequest()
        statsRequest.queue = "nope"
        let stats = await rpcError { try await client.call(JobQueueRPC.stats, statsRequest) }
        #expect(stats?.code == .notFound && stats?.message.contains("serves: thumbnails") == true)

        try await fixture.enqueue()
        let job = try #require(try await client.call(JobQueueRPC.lease, leaseRequest()).jobs.first)
        _ = try await client.call(JobQueueRPC.fail, failRequest(job))
        let stale = await rpcError { try await client.call(JobQueueRPC.complete, completeRequest(job), options: QueueFixture.patient) }
        #expect(stale?.code == .failedPrecondition && stale?.message.hasSuffix("this worker's result was not stored") == true)
        #expect(fixture.effects.count == 0 && fixture.finishes.all == [false])

        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.pageSize = 5000
        let page = await rpcError { try await client.call(JobQueueRPC.listJobs, list) }
        #expect(page?.code == .invalidArgument && page?.message == "page_size must be in 0...1000 (got 5000)")
        var purge = PurgeJobsRequest()
        purge.queue = "thumbnails"
        purge.state = .queued
        let purgeQueued = await rpcError { try await client.call(JobQueueRPC.purgeJobs, purge) }
        #expect(purgeQueued?.code == .invalidArgument && purgeQueued?.message.contains("never purged") == true)
    }
}
