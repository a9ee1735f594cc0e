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

/// Lease over the socket: waiting leases and what wakes them, expired leases, and the sweeper.
extension JobQueueRPCTests {
    @Test func aWaitingLeaseIsWokenByAnotherClientsGiveBackAndByAHostsEnqueue() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.ready()
        let other = try RPCClient(context: testContext, endpoint: fixture.folder.endpoint("rpc"), configuration: QueueFixture.clientConfiguration)
        defer { other.close() }
        try await fixture.enqueue()
        let held = try #require(try await other.call(JobQueueRPC.lease, leaseRequest(worker: "other")).jobs.first)

        // No sweeper runs: only the give-back's signal can wake the wait before its 20 s.
        let client = fixture.client
        let waiting = Task { try await client.call(JobQueueRPC.lease, leaseRequest(waitMs: 20_000), options: .init(timeoutMilliseconds: 30_000)) }
        await fixture.waitForWaiters(1)
        _ = try await other.call(JobQueueRPC.fail, failRequest(held, giveBack: true))
        #expect(try await waiting.value.jobs.map(\.jobId) == [held.jobId])

        let second = Task { try await client.call(JobQueueRPC.lease, leaseRequest(waitMs: 20_000), options: .init(timeoutMilliseconds: 30_000)) }
        await fixture.waitForWaiters(1)
        try await fixture.enqueue()
        #expect(try await second.value.jobs.count == 1)
    }

    @Test func aWaitingLeaseTakesAJobWhenItFallsDueWithNoSignal() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.ready()
        // Due in 300 ms, announced to nobody, and no sweeper: only the wait's own wake-up at the
        // queue's next due time can lease it before the 20 s wait ends empty.
        let id = try await fixture.owner.write { _, jobs in
            let now = SystemClock().nowMilliseconds()
            return try jobs.enqueue(queue: "thumbnails", payload: [7], runAtMs: now + 300, now: now).job.jobId
        }
        let leased = try await fixture.client.call(
            JobQueueRPC.lease, leaseRequest(waitMs: 20_000), options: .init(timeoutMilliseconds: 30_000)).jobs
        #expect(leased.map(\.jobId) == [id])
    }

    @Test func maxJobsLeasesSeveralAtOnce() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.enqueue(5)
        let first = try await fixture.client.call(JobQueueRPC.lease, leaseRequest(max: 3)).jobs
        let rest = try await fixture.client.call(JobQueueRPC.lease, leaseRequest(max: 3)).jobs
        #expect(first.count == 3 && rest.count == 2 && Set((first + rest).map(\.jobId)).count == 5)
    }

    @Test func aWaitThatReachesItsEndGetsAnEmptyAnswerBeforeTheCallsDeadline() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        #expect(try await fixture.client.call(JobQueueRPC.lease, leaseRequest(waitMs: 200)).jobs.isEmpty)
        // wait_ms beyond the call's budget: the wait ends in time for the empty reply.
        let capped = try await fixture.client.call(
            JobQueueRPC.lease, leaseRequest(waitMs: 60_000), options: .init(timeoutMilliseconds: 1000, retry: .none))
        #expect(capped.jobs.isEmpty)
    }

    @Test func aWaitingLeaseWhoseWorkerWentAwayGivesItsJobBackAtOnce() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.ready()
        // A worker that stops while its Lease waits (a restart, a scale-down): the Lease is
        // still waiting at the service when the next job comes.
        let gone = try RPCClient(context: testContext, endpoint: fixture.folder.endpoint("rpc"), configuration: QueueFixture.clientConfiguration)
        let waiting = Task {
            try await gone.call(JobQueueRPC.lease, leaseRequest(worker: "gone", waitMs: 20_000), options: .init(timeoutMilliseconds: 30_000))
        }
        await fixture.waitForWaiters(1)
        gone.close()
        _ = await waiting.result
        // libzmq ends the connection on its own thread: the service has seen the close once it
        // closed its end, the fixture's client's connection alone left.
        #expect(try await eventually(within: 10) { acceptedConnections(at: fixture.folder.endpoint("rpc")) == 1 })
        // The ROUTER drops the peer's pipe a few command round trips between libzmq's threads
        // after the connection closes; until then a send to "gone" is taken and lost, and the job
        // would wait out its lease. Under a loaded suite those round trips took longer than the
        // enqueue and the answer (one failure in about six whole runs): let them finish.
        try await Task.sleep(for: .milliseconds(500))
        try await fixture.enqueue()
        // Given back as the answer failed to reach "gone": the next worker has it now, not
        // after the 30 s lease, as a first attempt with no error.
        let leased = try await fixture.client.call(
            JobQueueRPC.lease, leaseRequest(worker: "alive", waitMs: 10_000), options: .init(timeoutMilliseconds: 20_000))
        #expect(leased.jobs.count == 1 && leased.jobs.first?.attempts == 1 && leased.jobs.first?.workerId == "alive", "\(leased.jobs)")
    }

    @Test func aDeadWorkersJobIsLeasedAgainWhenItsLeaseExpires() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.enqueue()
        let lost = try #require(try await fixture.client.call(JobQueueRPC.lease, leaseRequest(worker: "dead", leaseMs: 300)).jobs.first)
        // The wait sleeps until the lease's expiry, its queue's next due time; no sweeper runs.
        let again = try await fixture.client.call(
            JobQueueRPC.lease, leaseRequest(worker: "alive", waitMs: 10_000), options: .init(timeoutMilliseconds: 20_000))
        #expect(again.jobs.map(\.jobId) == [lost.jobId] && again.jobs.first?.attempts == 2)
        #expect(again.jobs.first?.workerId == "alive")
    }

    @Test func theSweeperEndsExpiredLeasesAndPublishesTheDead() async throws {
        let oneAttempt = JobQueueConfiguration(
            name: "thumbnails", retry: JobRetryPolicy(maxAttempts: 1, baseDelayMilliseconds: 10, factor: 1, maxDelayMilliseconds: 10, jitter: 0))
        let fixture = try QueueFixture(queues: [oneAttempt], sweeperInterval: 20)
        defer { fixture.stop() }
        try await fixture.enqueue()
        let job = try #require(try await fixture.client.call(JobQueueRPC.lease, leaseRequest(leaseMs: 100)).jobs.first)
        await fixture.events.wait(for: EventTopic.jobDead, count: 1)
        #expect(fixture.events.all.map(\.event.jobId) == [job.jobId])
        var get = GetJobRequest()
        get.queue = "thumbnails"
        get.jobId = job.jobId
        let dead = try await fixture.client.call(JobQueueRPC.getJob, get)
        #expect(dead.state == .dead && dead.errors.map(\.message) == ["lease expired"] && dead.errors.first?.workerId == "w1")
    }

    @Test func aJobNobodyAnnouncedIsFoundByTheSweepersNextTick() async throws {
        let fixture = try QueueFixture(sweeperInterval: 20)
        defer { fixture.stop() }
        try await fixture.ready()
        let client = fixture.client
        let waiting = Task { try await client.call(JobQueueRPC.lease, leaseRequest(waitMs: 20_000), options: .init(timeoutMilliseconds: 30_000)) }
        await fixture.waitForWaiters(1)
        try await fixture.enqueue(announce: false)
        #expect(try await waiting.value.jobs.count == 1)
    }

    @Test func theSweeperPrunesDoneJobsPastTheirRetention() async throws {
        let brief = JobQueueConfiguration(name: "thumbnails", retention: JobRetention(doneMilliseconds: 1))
        let fixture = try QueueFixture(queues: [brief], sweeperInterval: 20, pruneChunk: 2)
        defer { fixture.stop() }
        try await fixture.enqueueAndComplete(5)
        // Ten seconds at most for the sweeper's ticks (chunks of 2; the chunking itself is
        // JobStoreTests' doneJobsPastRetentionArePrunedInBoundedChunks).
        #expect(try await fixture.jobRowsOnceNoneLeft() == 0)
        var stats = JobStatsRequest()
        stats.queue = "thumbnails"
        #expect(try await fixture.client.call(JobQueueRPC.stats, stats).done == 0)
    }

    @Test func aStoppedSweeperSweepsNoMore() async throws {
        let brief = JobQueueConfiguration(name: "thumbnails", retention: JobRetention(doneMilliseconds: 1))
        let fixture = try QueueFixture(queues: [brief])
        defer { fixture.stop() }
        let sweeper = fixture.service.sweeper(intervalMilliseconds: 5, pruneChunk: 1)
        try sweeper.start()
        try await fixture.enqueueAndComplete(3)
        // Running, it prunes what is past retention.
        #expect(try await fixture.jobRowsOnceNoneLeft() == 0)
        sweeper.stop()
        sweeper.stop()
        try await fixture.enqueueAndComplete(2)
        // Stopped, forty of its intervals go by and the DONE jobs stay.
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await fixture.owner.perform { try $0.count("jobs") } == 2)
    }
}
