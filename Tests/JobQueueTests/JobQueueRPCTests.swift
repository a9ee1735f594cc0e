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

/// One context for the tests of this target; sockets are per test.
let testContext = try! Context(ioThreads: 1)

/// Logs go nowhere unless HOMEPWNER_TEST_LOGS is set.
let testLogger = Logger(
    label: "test", level: ProcessInfo.processInfo.environment["HOMEPWNER_TEST_LOGS"] == nil ? .critical : .debug)

typealias TestOwner = DatabaseOwner<TestHost>

/// The events a service published, in order.
final class EventLog: Sendable {
    private let events = Locked<[(topic: String, event: JobEvent)]>([])

    func record(_ topic: String, _ event: JobEvent) { events.withLock { $0.append((topic, event)) } }

    var all: [(topic: String, event: JobEvent)] { events.withLock { $0 } }

    /// Waits (10 s at most) until `count` events of `topic` were published.
    func wait(for topic: String, count: Int) async {
        let end = monotonicMilliseconds() + 10_000
        while all.filter({ $0.topic == topic }).count < count && monotonicMilliseconds() < end {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A host serving the queue over a real socket: a `GroupCommitStore` with a `JobStore` on a
/// `DatabaseOwner`, a `ServiceHost`, and a real `RPCClient`.
struct QueueFixture {
    let folder: TemporaryFolder
    let owner: TestOwner
    /// The read-only connection the service reads on, beside the writer.
    let reader: DatabaseOwner<JobReadConnection>
    let service: JobQueueService<TestOwner>
    let composition: ServiceComposition
    let client: RPCClient
    let events = EventLog()
    let effects = Counter()
    /// The fixture's clients wait up to 10 s to connect: a loaded CI machine (the whole suite
    /// runs at once on two cores) has taken over a second to connect an ipc socket.
    static let clientConfiguration = RPCClient.Configuration(connectWaitMilliseconds: 10_000)
    /// For Complete, whose staging runs as a task on the shared pool: in a full run, tests that
    /// block the pool's two threads in a synchronous stop() have held it up past 10 s.
    static let patient = CallOptions(timeoutMilliseconds: 60_000)
    /// What each staged completion's `finish` was told (committed or not).
    let finishes = Recorded<Bool>()

    /// Started; `sweeperInterval` adds the sweeper to the composition; `maxInFlight` serves
    /// with a server that admits that many calls at once (from any one connection too), and
    /// answers the next ones busy (RESOURCE_EXHAUSTED with retry_after_ms).
    init(
        queues: [JobQueueConfiguration] = [testQueue], sweeperInterval: Int32? = nil, pruneChunk: Int = 1000,
        maxInFlight: Int? = nil
    ) throws {
        folder = try TemporaryFolder()
        let path = folder.path + "/host.db"
        owner = TestOwner(name: "test-host", closedError: RPCError.unavailable("the test host is stopping")) {
            try TestHost(path: path, queues: queues, random: SystemRandomNumberGenerator())
        }
        let events = events, effects = effects, finishes = finishes
        let completion: JobQueueService<TestOwner>.Completion = { _ in
            StagedCompletion(effect: { host, job, result in
                effects.bump()
                _ = try host.insertThing("thumbnail of job \(job.jobId)")
                return result + Array("!".utf8)
            }, finish: { finishes.append($0) })
        }
        reader = DatabaseOwner(jobReaderOf: path, queues: queues, name: "test-host-reader")
        service = JobQueueService(
            owner: owner, reader: reader, queues: queues, completions: ["thumbnails": completion], clock: SystemClock(),
            logger: testLogger, publish: { events.record($0, $1) })
        let host: any LifecycleService, server: RPCServer
        if let maxInFlight {
            server = try RPCServer(
                context: testContext,
                configuration: .init(
                    endpoints: [folder.endpoint("rpc")], processName: "test-host", maxInFlight: maxInFlight,
                    maxInFlightPerPeer: maxInFlight),
                logger: testLogger)
            host = ServerPart(server: server)
        } else {
            let serviceHost = try ServiceHost(name: "test-host", context: testContext, rpcEndpoints: [folder.endpoint("rpc")], logger: testLogger)
            (host, server) = (serviceHost, serviceHost.server)
        }
        service.register(on: server)
        var services: [any LifecycleService] = [owner, reader]
        if let sweeperInterval { services.append(service.sweeper(intervalMilliseconds: sweeperInterval, pruneChunk: pruneChunk)) }
        composition = ServiceComposition(services + [host])
        try composition.start()
        client = try RPCClient(context: testContext, endpoint: folder.endpoint("rpc"), configuration: QueueFixture.clientConfiguration)
    }

    func stop() {
        client.close()
        composition.stop()
        folder.remove()
    }

    /// Enqueues as a host does (in a write of its own), then wakes the waiting Lease calls.
    @discardableResult
    func enqueue(_ count: Int = 1, batch: Bool = false, announce: Bool = true) async throws -> String? {
        let batchID = try await owner.write { _, jobs in
            let now = SystemClock().nowMilliseconds()
            let batchID = batch ? try jobs.createBatch(queue: "thumbnails", now: now) : nil
            for index in 0..<count {
                _ = try jobs.enqueue(queue: "thumbnails", payload: [UInt8(index)], dedupeKey: "key-\(UUID())", batchID: batchID, now: now)
            }
            return batchID
        }
        if announce { service.jobsReady(queue: "thumbnails") }
        return batchID
    }

    /// Returns once the client's connection is up (a Health/Check answered, retried while the
    /// connection is not): a long-poll Lease sent first would otherwise carry the connection's
    /// set-up in its own connect wait, which the suite's load has stretched past 10 s.
    func ready() async throws {
        _ = try await client.call(
            HealthRPC.check, HealthCheckRequest(),
            options: CallOptions(timeoutMilliseconds: 60_000, retry: RetryPolicy(maxAttempts: 6, initialBackoffMilliseconds: 100)))
    }

    /// Waits (10 s at most) until `count` Lease calls sleep on the queue.
    func waitForWaiters(_ count: Int) async {
        let notifier = service.queues["thumbnails"]!.notifier
        let end = monotonicMilliseconds() + 10_000
        while notifier.waiterCount < count && monotonicMilliseconds() < end { try? await Task.sleep(for: .milliseconds(2)) }
        // Said here, not left to the next step's timeout: the calls never reached the service.
        #expect(notifier.waiterCount >= count, "\(notifier.waiterCount) of \(count) Lease calls waiting after 10 s; client connected: \(client.isConnected)")
    }
}

/// A bare RPC server as a part of a composition (the fixture's, when it sets the server's limits).
struct ServerPart: LifecycleService {
    let server: RPCServer
    var name: String { "test-server" }
    func start() throws { try server.start() }
    func stop() {
        _ = server.drain(timeoutMilliseconds: 5000)
        server.stop()
    }
}

func leaseRequest(_ queue: String = "thumbnails", worker: String = "w1", max: Int32 = 1, leaseMs: Int32 = 0, waitMs: Int32 = 0) -> LeaseRequest {
    var request = LeaseRequest()
    request.queue = queue
    request.workerId = worker
    request.maxJobs = max
    request.leaseMs = leaseMs
    request.waitMs = waitMs
    return request
}

func failRequest(_ job: Job, permanent: Bool = false, giveBack: Bool = false, retryAfterMs: Int32 = 0) -> FailRequest {
    var request = FailRequest()
    request.queue = job.queue
    request.jobId = job.jobId
    request.leaseId = job.leaseId
    request.error = "decode failed"
    request.permanent = permanent
    request.giveBack = giveBack
    request.retryAfterMs = retryAfterMs
    request.workerId = "w1"
    return request
}

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
        try await fixture.enqueue(5)
        for job in try await fixture.client.call(JobQueueRPC.lease, leaseRequest(max: 5)).jobs {
            _ = try await fixture.client.call(JobQueueRPC.complete, completeRequest(job), options: QueueFixture.patient)
        }
        // Ten seconds at most for the sweeper's ticks (chunks of 2; the chunking itself is
        // JobStoreTests' doneJobsPastRetentionArePrunedInBoundedChunks).
        var left: Int64 = 1
        let end = monotonicMilliseconds() + 10_000
        while left > 0 && monotonicMilliseconds() < end {
            left = try await fixture.owner.perform { try $0.count("jobs") }
            if left > 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(left == 0)
        var stats = JobStatsRequest()
        stats.queue = "thumbnails"
        #expect(try await fixture.client.call(JobQueueRPC.stats, stats).done == 0)
    }
}
