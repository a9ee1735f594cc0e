import Foundation
import ItemService
import JobQueue
import Proto
import RPC
import Runtime
import SQLite
import Testing

/// The cascade runner in item-service against the fake image service: the jobs of an upgraded
/// outbox, deliveries cut short by a crash or a stop, and the order of deliveries owed.
@Suite struct CascadeRunnerTests {
    typealias Fake = CascadeTests.FakeImageService

    /// Runs `body` with item-service started in `folder` (its composition and a client), and
    /// `fake` serving as its image service when given; stops them all after.
    static func serving(
        _ folder: TemporaryFolder, _ fake: Fake?, _ body: (ServiceComposition, RPCClient) async throws -> Void
    ) async throws {
        let images = try fake?.start(folder.endpoint("image"))
        defer { images?.stop() }
        // Before the image service stops: its held calls end.
        defer { fake?.release.signal() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        try await body(host, client)
    }

    static func waitUntilNothingIsOwed(_ client: RPCClient) async throws {
        let end = ContinuousClock.now + .seconds(30)
        while try await CascadeTests().pending(client) > 0 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await CascadeTests().pending(client) == 0)
    }

    /// The jobs of the cascade queue in `state`, oldest first, over item-service's JobQueue.
    static func jobs(_ client: RPCClient, _ state: JobState) async throws -> [Job] {
        var list = ListJobsRequest()
        list.queue = CascadeQueue.name
        list.state = state
        return try await client.call(JobQueueRPC.listJobs, list, options: .init(timeoutMilliseconds: 10_000)).jobs.reversed()
    }

    @Test func cascadesOwedInTheOutboxOfAnOlderBuildAreDeliveredAfterTheUpgrade() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/data/items", withIntermediateDirectories: true)
        let attached = UUID().uuidString.lowercased()
        try CascadeQueueTests.writeSchema4(
            folder.path + "/data/items/items.db", outbox: [("owner-a", attached, 10, 0, 0), ("owner-b", "", 20, 7, 40)])
        let fake = Fake(images: ["owner-a": 2, "owner-b": 1, "kept": 4])
        try await Self.serving(folder, fake) { _, client in
            try await Self.waitUntilNothingIsOwed(client)
            // No closure inside #expect inside a closure (Swift 6.3 miscompiles it).
            let deleted = fake.deleted.withLock { $0 }, requests = fake.requests.withLock { $0 }
            let attempts = try await Self.jobs(client, .done).map(\.attempts)
            #expect(deleted == ["owner-a": 2, "owner-b": 1])
            #expect(requests.map(\.ownerKey) == ["owner-a", "owner-b"] && requests.map(\.attachedKeys) == [[attached], []])
            #expect(attempts == [1, 1])
        }
    }

    @Test func aDeliveryCutShortByACrashIsDeliveredAtTheNextStartNotAfterItsLease() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var doomed = ""
        // As a SIGKILL mid-delivery leaves it: the job RUNNING under the runner's lease, an
        // hour long, so only taking it back at start delivers it within this test.
        try CascadeTests.prepareDatabase(folder) { store in
            doomed = try store.create(createRequest("Doomed"), now: 1).item.key
            let now = SystemClock().nowMilliseconds()
            _ = try store.delete(key: doomed, now: now)
            var lease = LeaseRequest()
            lease.queue = CascadeQueue.name
            lease.workerId = CascadeRunner.workerID
            lease.leaseMs = 3_600_000
            #expect(try store.write { try store.jobs.lease(lease, now: now).jobs.count } == 1)
        }
        let fake = Fake(images: [doomed: 3])
        try await Self.serving(folder, fake) { _, client in
            try await Self.waitUntilNothingIsOwed(client)
            let deleted = fake.deleted.withLock { $0 }
            #expect(deleted == [doomed: 3])
            var get = GetJobRequest()
            get.queue = CascadeQueue.name
            get.jobId = try #require(try await Self.jobs(client, .done).first?.jobId)
            let job = try await client.call(JobQueueRPC.getJob, get)
            #expect(job.attempts == 2 && job.errors.map(\.message) == ["item-service stopped during this delivery"], "\(job)")
        }
    }

    @Test func stoppingTheServiceGivesBackTheDeliveryInFlightBeforeTheStoreCloses() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let fake = Fake(images: [:], holds: true)
        try await Self.serving(folder, fake) { host, client in
            var delete = DeleteItemRequest()
            delete.key = try await client.call(ItemServiceRPC.createItem, createRequest("Doomed")).key
            _ = try await client.call(ItemServiceRPC.deleteItem, delete)
            let end = ContinuousClock.now + .seconds(30)
            while fake.calls.withLock({ $0.isEmpty }) && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(10)) }
            let running = try await Self.jobs(client, .running)
            #expect(running.count == 1, "the delivery is in flight")

            // stop() returns once the runner has: its job is back in QUEUED, the attempt not counted.
            host.stop()
            let db = try Database(path: folder.path + "/data/items/items.db", mode: .readOnly)
            defer { try? db.close() }
            let row = try db.query("SELECT state, attempts, lease_id, (SELECT count(*) FROM job_errors) FROM jobs")
            #expect(row.count == 1 && row[0].values == [.integer(1), .integer(0), .text(""), .integer(0)], "\(row)")
        }
    }

    @Test func twoDeletesWhileImagesAreDownAreEachDeliveredOnceInDueOrderWhenTheyAreBack() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try await Self.serving(folder, nil) { _, client in
            var keys: [String] = []
            var delete = DeleteItemRequest()
            for name in ["First", "Second"] {
                delete.key = try await client.call(ItemServiceRPC.createItem, createRequest(name)).key
                _ = try await client.call(ItemServiceRPC.deleteItem, delete)
                keys.append(delete.key)
            }
            // Both tried and failed while the image service is down.
            let end = ContinuousClock.now + .seconds(30)
            while try CascadeTests.outbox(folder).contains(where: { $0.attempts == 0 }) && ContinuousClock.now < end {
                try await Task.sleep(for: .milliseconds(20))
            }
            let failures = try CascadeTests.outbox(folder).map(\.attempts)
            let pending = try await CascadeTests().pending(client)
            #expect(failures.count == 2 && failures.min()! >= 1 && pending == 2)

            let fake = Fake(images: [keys[0]: 1, keys[1]: 2])
            let images = try fake.start(folder.endpoint("image"))
            defer { images.stop() }
            try await Self.waitUntilNothingIsOwed(client)
            let deleted = fake.deleted.withLock { $0 }
            #expect(deleted == [keys[0]: 1, keys[1]: 2])
            // Once each, the one due first (run_at, then job id, as each last stood) first.
            let done = try await Self.jobs(client, .done)
            let dueOrder = try done.sorted { ($0.runAtMs, Int($0.jobId)!) < ($1.runAtMs, Int($1.jobId)!) }
                .map { try DeleteImagesForOwnerRequest(serializedBytes: $0.payload).ownerKey }
            let delivered = fake.requests.withLock { $0.map(\.ownerKey) }
            #expect(delivered == dueOrder && Set(dueOrder) == Set(keys))
        }
    }
}
