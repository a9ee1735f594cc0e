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

    /// Enqueues `count` jobs, then leases and completes them (DONE).
    func enqueueAndComplete(_ count: Int) async throws {
        try await enqueue(count)
        for job in try await client.call(JobQueueRPC.lease, leaseRequest(max: Int32(count))).jobs {
            _ = try await client.call(JobQueueRPC.complete, completeRequest(job), options: QueueFixture.patient)
        }
    }

    /// The rows of the jobs table once it is empty (0), or what it holds after ten seconds.
    func jobRowsOnceNoneLeft() async throws -> Int64 {
        var left: Int64 = 1
        let end = monotonicMilliseconds() + 10_000
        while left > 0 && monotonicMilliseconds() < end {
            left = try await owner.perform { try $0.count("jobs") }
            if left > 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
        return left
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
