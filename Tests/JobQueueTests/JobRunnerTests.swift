import Foundation
@testable import JobQueue
import Proto
import RPC
import Runtime
import Locking
import Synchronization
import Testing
import TestSupport
import WorkerRuntime

/// The worker side of the queue (`WorkerRuntime.JobRunner`) against the real service over a
/// real socket: leases as many jobs as it has slots, keeps long jobs leased, reports failures,
/// and at stop finishes or hands back what it holds.
@Suite struct JobRunnerTests {
    /// A connection to the fixture's endpoint, started.
    static func connection(_ fixture: QueueFixture) throws -> ClientConnection {
        let connection = ClientConnection(
            name: "runner-client", context: testContext, endpoint: fixture.folder.endpoint("rpc"), configuration: QueueFixture.clientConfiguration)
        try connection.start()
        return connection
    }

    static func configuration(concurrency: Int = 2, leaseMs: Int32 = 0, drainMs: Int = 10_000) -> JobRunner.Configuration {
        JobRunner.Configuration(
            queue: "thumbnails", workerID: "runner-test", concurrency: concurrency, leaseMilliseconds: leaseMs,
            waitMilliseconds: 2000, drainMilliseconds: drainMs)
    }

    /// The job as the queue has it now.
    static func job(_ fixture: QueueFixture, _ id: String) async throws -> Job {
        var request = GetJobRequest()
        request.queue = "thumbnails"
        request.jobId = id
        return try await fixture.client.call(JobQueueRPC.getJob, request)
    }

    static func stats(_ fixture: QueueFixture, options: CallOptions = .init()) async throws -> JobStatsResponse {
        var request = JobStatsRequest()
        request.queue = "thumbnails"
        return try await fixture.client.call(JobQueueRPC.stats, request, options: options)
    }

    /// The queue's DONE jobs.
    static func doneJobs(_ fixture: QueueFixture) async throws -> [Job] {
        var request = ListJobsRequest()
        request.queue = "thumbnails"
        request.state = .done
        return try await fixture.client.call(JobQueueRPC.listJobs, request).jobs
    }

    /// Waits (`seconds`, 60 at most by default) until `done` says the queue got there; records
    /// a failure at the caller's line when it never did.
    static func waitUntil(
        seconds: Int64 = 60, sourceLocation: SourceLocation = #_sourceLocation, _ done: () async throws -> Bool
    ) async throws {
        let end = monotonicMilliseconds() + seconds * 1000
        while try await !done() {
            guard monotonicMilliseconds() < end else {
                Issue.record("not there after \(seconds) s", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// How many Complete calls the fixture's service answered RESOURCE_EXHAUSTED.
    static func busyCompletes(_ fixture: QueueFixture) async throws -> UInt64 {
        let stats = try await fixture.client.call(MetricsRPC.stats, ProcessStatsRequest())
        let complete = stats.methods.first { $0.method == JobQueueRPC.complete.path }
        return complete?.codes.first { $0.code == .resourceExhausted }?.count ?? 0
    }

    @Test func runsEveryJobOnceNoMoreAtATimeThanItsSlotsAndCompletesWithTheHandlersResult() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        let running = Locked((now: 0, most: 0, runs: [String: Int]()))
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(concurrency: 3), logger: testLogger) { job in
            running.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
                $0.runs[job.jobId, default: 0] += 1
            }
            try await Task.sleep(for: .milliseconds(20))
            running.withLock { $0.now -= 1 }
            return Array("made \(job.payload[0])".utf8)
        }
        try runner.start()
        try await fixture.enqueue(24)
        try await Self.waitUntil { try await Self.stats(fixture).done == 24 }
        await offThePool { runner.stop() }

        let seen = running.withLock { $0 }
        #expect(seen.runs.count == 24 && seen.runs.values.allSatisfy { $0 == 1 }, "\(seen.runs)")
        #expect(seen.most <= 3 && seen.most >= 2, "at most 3 at once, and more than one: \(seen.most)")
        #expect(runner.counts.completed == 24)
        let first = try await Self.job(fixture, seen.runs.keys.sorted { Int($0)! < Int($1)! }[0])
        // The fixture's effect appends "!" to what the worker reported.
        #expect(first.state == .done && first.result == Array("made 0!".utf8) && first.attempts == 1)
    }

    @Test func anIdleRunnerWaitingInItsLeaseRunsTheJobThatWakesIt() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        try await fixture.ready()
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        let runs = Atomic<Int>(0)
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(concurrency: 1), logger: testLogger) { _ in
            runs.add(1, ordering: .relaxed)
            return []
        }
        try runner.start()
        defer { runner.stop() }
        // The runner's Lease is waiting in the queue before the job exists.
        await fixture.waitForWaiters(1)
        try await fixture.enqueue()
        try await Self.waitUntil { try await Self.stats(fixture).done == 1 }
        #expect(runs.load(ordering: .relaxed) == 1)
        let done = try await Self.doneJobs(fixture)
        #expect(done.count == 1 && done[0].attempts == 1 && done[0].errors.isEmpty, "\(done)")
    }

    @Test func aJobLongerThanItsLeaseIsKeptByHeartbeatsAndNotSweptOrRunTwice() async throws {
        let fixture = try QueueFixture(sweeperInterval: 20)
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        let runs = Atomic<Int>(0)
        // Leases of 6 s, a job of 14 s: without heartbeats the sweeper takes it back twice. A
        // heartbeat comes every 2 s, so the lease survives a stall of 4 s. CI has stalled this
        // whole process for over 3 s while the suite ran on two cores (1.5 s leases lost it).
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(leaseMs: 6000), logger: testLogger) { _ in
            runs.add(1, ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(14_000))
            return []
        }
        try runner.start()
        try await fixture.enqueue()
        try await Self.waitUntil { try await Self.stats(fixture).done == 1 }
        await offThePool { runner.stop() }
        #expect(runs.load(ordering: .relaxed) == 1)
        let done = try await Self.doneJobs(fixture)
        #expect(done.count == 1 && done[0].attempts == 1 && done[0].errors.isEmpty, "\(done)")
    }

    @Test func aCompleteAnsweredBusyIsSentAgainAfterRetryAfterUntilTheServiceTakesIt() async throws {
        // Three calls at once: three waiting Leases of another worker fill the service for 3 s.
        let fixture = try QueueFixture(maxInFlight: 3)
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        let gate = Locked(false), started = Atomic<Bool>(false)
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(concurrency: 1), logger: testLogger) { _ in
            started.store(true, ordering: .relaxed)
            while !gate.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            return Array("made".utf8)
        }
        try runner.start()
        defer { runner.stop() }
        try await fixture.enqueue()
        try await Self.waitUntil { started.load(ordering: .relaxed) }
        let other = try RPCClient(context: testContext, endpoint: fixture.folder.endpoint("rpc"), configuration: QueueFixture.clientConfiguration)
        defer { other.close() }
        let fillers = (0..<3).map { _ in
            Task { try await other.call(JobQueueRPC.lease, leaseRequest(worker: "filler", waitMs: 3000), options: .init(timeoutMilliseconds: 10_000)) }
        }
        await fixture.waitForWaiters(3)
        gate.withLock { $0 = true }
        // The Complete is refused busy (the client's own retries are over in ~300 ms) until the
        // fillers' waits end; the job must then be DONE, not failed or left to its lease. This
        // test's own calls are refused busy too meanwhile: they wait it out.
        let patientOfBusy = CallOptions(timeoutMilliseconds: 20_000, retry: RetryPolicy(maxAttempts: 1000))
        try await Self.waitUntil(seconds: 20) { try await Self.stats(fixture, options: patientOfBusy).done == 1 }
        for filler in fillers { _ = try await filler.value }
        let done = try #require(try await Self.doneJobs(fixture).first)
        #expect(done.attempts == 1 && done.errors.isEmpty && done.result == Array("made!".utf8), "\(done)")
        #expect(runner.counts == (completed: 1, failed: 0))
        #expect(try await Self.busyCompletes(fixture) > 0, "the service answered the Complete busy at least once")
    }

    @Test func aHandlerRefusedForAFullDiskRunsAgainUnderItsLeaseWithoutFailingTheJob() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        // The handler stores through a service whose disk is full for its first two tries (a
        // capture's PutImage).
        let tries = Atomic<Int>(0)
        let conditions = Locked<[HealthCondition]>([])
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(concurrency: 1), logger: testLogger) { _ in
            if tries.add(1, ordering: .relaxed).newValue <= 2 { throw RPCError.diskFull("the image store's disk is full (test)") }
            return Array("stored".utf8)
        }
        try runner.start()
        defer { runner.stop() }
        try await fixture.enqueue()
        try await Self.waitUntil {
            if tries.load(ordering: .relaxed) == 2 { conditions.withLock { $0 = runner.healthConditions() } }
            return try await Self.stats(fixture).done == 1
        }
        let done = try #require(try await Self.doneJobs(fixture).first)
        #expect(done.attempts == 1 && done.errors.isEmpty && done.result == Array("stored!".utf8), "\(done)")
        #expect(tries.load(ordering: .relaxed) == 3 && runner.counts == (completed: 1, failed: 0))
        #expect(conditions.withLock { $0 }.first.map { $0.name == "disk_full" && $0.message.contains("the image store's disk is full (test)") } == true, "\(conditions.withLock { $0 })")
        #expect(runner.healthConditions().isEmpty)
    }

    @Test func aHandlersFailureIsKeptOnTheJobAndAPermanentOneIsDeadAtOnce() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(), logger: testLogger) { job in
            if job.payload[0] == 0 { throw JobFailure("not a JPEG: starts with 0x00", permanent: true) }
            throw JobFailure("image service restarting", retryAfterMilliseconds: 60_000)
        }
        try runner.start()
        try await fixture.enqueue(2)
        try await Self.waitUntil {
            let stats = try await Self.stats(fixture)
            return stats.dead == 1 && stats.scheduled == 1
        }
        await offThePool { runner.stop() }
        let dead = try await Self.job(fixture, "1"), retried = try await Self.job(fixture, "2")
        #expect(dead.state == .dead && dead.errors.map(\.message) == ["not a JPEG: starts with 0x00"])
        #expect(dead.errors.first?.workerId == "runner-test")
        #expect(retried.state == .queued && retried.errors.map(\.message) == ["image service restarting"])
        #expect(retried.runAtMs >= retried.updatedAtMs + 59_000)
    }

    @Test func aTypedHandlerGetsItsPayloadDecodedAndAPayloadThatIsNotOneIsDeadAtOnce() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        var good = ThumbnailJob()
        good.imageKey = "photo-1"
        good.sizes = [64, 256]
        let payload = good.serializedBytes()
        try await fixture.owner.write { _, jobs in
            let now = SystemClock().nowMilliseconds()
            _ = try jobs.enqueue(queue: "thumbnails", payload: payload, dedupeKey: "good", now: now)
            _ = try jobs.enqueue(queue: "thumbnails", payload: [0xFF, 0xFF], dedupeKey: "bad", now: now)
        }
        fixture.service.jobsReady(queue: "thumbnails")
        let handler = JobRunner.typed(ThumbnailJob.self) { payload, _ in
            var result = ThumbnailResult()
            result.thumbnails = payload.sizes.map { size in
                var thumbnail = Thumbnail()
                thumbnail.size = size
                return thumbnail
            }
            return result
        }
        let runner = JobRunner(name: "runner", connection: connection, configuration: Self.configuration(), logger: testLogger, handler: handler)
        try runner.start()
        try await Self.waitUntil {
            let stats = try await Self.stats(fixture)
            return stats.done == 1 && stats.dead == 1
        }
        await offThePool { runner.stop() }
        let done = try await Self.job(fixture, "1"), dead = try await Self.job(fixture, "2")
        // The fixture's completion appends "!" to the result it stores.
        let stored = try ThumbnailResult(serializedBytes: Array(done.result.dropLast()))
        #expect(stored.thumbnails.map(\.size) == [64, 256])
        #expect(dead.state == .dead && dead.attempts == 1, "\(dead)")
        #expect(dead.errors.first?.message.contains("is not a homepwner.v1.ThumbnailJob") == true, "\(dead.errors)")
    }

    @Test func aStoppingHostAnswersItsWaitingLeasesAtOnceInsteadOfAbandoningThem() async throws {
        let fixture = try QueueFixture()
        defer { fixture.folder.remove() }
        try await fixture.ready()
        // A wait longer than the server's stop grace: without the drain hook it would be
        // abandoned (UNAVAILABLE) when the grace ran out.
        async let waiting = fixture.client.call(
            JobQueueRPC.lease, leaseRequest(waitMs: 60_000), options: CallOptions(timeoutMilliseconds: 70_000))
        await fixture.waitForWaiters(1)
        await offThePool { fixture.composition.stop() }
        #expect(try await waiting.jobs.isEmpty)
        fixture.client.close()
    }

    @Test func stopFinishesWhatEndsWithinTheDrainAndHandsBackTheRestAtOnce() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let connection = try Self.connection(fixture)
        defer { connection.stop() }
        let started = Atomic<Int>(0), stopping = Atomic<Bool>(false)
        let runner = JobRunner(
            name: "runner", connection: connection, configuration: Self.configuration(concurrency: 2, drainMs: 3000), logger: testLogger
        ) { job in
            started.add(1, ordering: .relaxed)
            // Job 1 ends as soon as the stop has begun, within the drain period; job 2 would take a minute.
            if job.payload[0] == 0 {
                while !stopping.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(5)) }
            } else {
                try await Task.sleep(for: .seconds(60))
            }
            return []
        }
        try runner.start()
        try await fixture.enqueue(2)
        try await Self.waitUntil { started.load(ordering: .relaxed) == 2 }
        stopping.store(true, ordering: .relaxed)
        await offThePool { runner.stop() }
        let quick = try await Self.job(fixture, "1"), slow = try await Self.job(fixture, "2")
        #expect(quick.state == .done)
        // Handed back: queued again now, the attempt not counted, no error kept.
        #expect(slow.state == .queued && slow.attempts == 0 && slow.errors.isEmpty, "\(slow)")
        #expect(try await Self.stats(fixture).ready == 1)
    }
}
