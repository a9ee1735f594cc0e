import Foundation
import Harness
import Proto
import RPC
import Testing
import TestSupport
import RPCTestSupport

/// The item delete cascade against the real image service in the harness.
@Suite struct ItemCascadeTests {
    static func pending(_ items: RPCClient) async throws -> Int64 {
        try await items.call(ItemServiceRPC.stats, ItemStatsRequest(), options: .init(timeoutMilliseconds: 20_000)).pendingCascades
    }

    /// The images of `owner`: by default its photos (ORIGINAL), not the thumbnails the
    /// thumbnail worker of the harness makes of them; `.unspecified` for every kind.
    static func images(of owner: String, _ images: RPCClient, kind: ImageKind = .original) async throws -> [ImageInfo] {
        var list = ListImagesRequest()
        list.ownerKey = owner
        list.kind = kind
        return try await images.call(ImageServiceRPC.listImages, list, options: .init(timeoutMilliseconds: 20_000)).images
    }

    @Test func deletingAnItemWhileImagesAreDownDeletesItsPhotosOnceTheyAreBack() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        let doomed = try await clients.items.call(ItemServiceRPC.createItem, Self.createRequest("Rusty Spork"))
        let kept = try await clients.items.call(ItemServiceRPC.createItem, Self.createRequest("Shiny Mac"))
        for (index, owner) in [doomed.key, doomed.key, kept.key].enumerated() {
            let info = try await ImageServiceRPCTests.put(clients.images, try CascadeOrderTests.jpeg(seed: index), owner: owner)
            var attach = AttachPhotoRequest()
            attach.itemKey = owner
            attach.imageKey = info.key
            _ = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
        }
        #expect(try await Self.images(of: doomed.key, clients.images).count == 2)

        await offThePool { harness.stop(.imageService) }
        var delete = DeleteItemRequest()
        delete.key = doomed.key
        _ = try await clients.items.call(ItemServiceRPC.deleteItem, delete)
        #expect(try await Self.pending(clients.items) == 1)
        // The item service restarts while the cascade is owed; its job is on disk.
        try harness.restart(.itemService)
        #expect(try await Self.pending(clients.items) == 1)

        try harness.start(.imageService)
        let end = ContinuousClock.now + .seconds(60)
        while try await Self.pending(clients.items) > 0 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await Self.pending(clients.items) == 0)
        // Its photos and whatever was made of them.
        #expect(try await Self.images(of: doomed.key, clients.images, kind: .unspecified).isEmpty)
        #expect(try await Self.images(of: kept.key, clients.images).count == 1)
    }

    /// Pauses or resumes the cascade queue over item-service's JobQueue.
    static func pauseCascades(_ items: RPCClient, _ paused: Bool) async throws {
        var pause = PauseQueueRequest()
        pause.queue = "cascade"
        pause.paused = paused
        #expect(try await items.call(JobQueueRPC.pauseQueue, pause, options: .init(timeoutMilliseconds: 20_000)).paused == paused)
    }

    /// The cascade jobs in `state`, over item-service's JobQueue.
    static func cascadeJobs(_ items: RPCClient, _ state: JobState) async throws -> [Job] {
        var list = ListJobsRequest()
        list.queue = "cascade"
        list.state = state
        return try await items.call(JobQueueRPC.listJobs, list, options: .init(timeoutMilliseconds: 20_000)).jobs
    }

    @Test func aDeleteWhoseCascadeJobIsQueuedSurvivesARestartOfTheItemServiceAndIsDeliveredOnce() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        let doomed = try await clients.items.call(ItemServiceRPC.createItem, Self.createRequest("Rusty Spork"))
        _ = try await ImageServiceRPCTests.put(clients.images, try CascadeOrderTests.jpeg(seed: 7), owner: doomed.key)
        // Paused, so the job is surely QUEUED (not in flight) when the item service goes.
        try await Self.pauseCascades(clients.items, true)
        var delete = DeleteItemRequest()
        delete.key = doomed.key
        _ = try await clients.items.call(ItemServiceRPC.deleteItem, delete)
        let queued = try await Self.cascadeJobs(clients.items, .queued)
        #expect(queued.count == 1 && queued.first?.dedupeKey == "owner:\(doomed.key)" && queued.first?.attempts == 0)

        try harness.restart(.itemService)
        #expect(try await Self.pending(clients.items) == 1)
        #expect(try await Self.cascadeJobs(clients.items, .queued).map(\.jobId) == queued.map(\.jobId))
        #expect(try await Self.images(of: doomed.key, clients.images).count == 1, "paused: nothing was delivered")
        try await Self.pauseCascades(clients.items, false)
        let end = ContinuousClock.now + .seconds(60)
        while try await Self.pending(clients.items) > 0 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await Self.pending(clients.items) == 0)
        #expect(try await Self.images(of: doomed.key, clients.images, kind: .unspecified).isEmpty)
        let done = try await Self.cascadeJobs(clients.items, .done)
        #expect(done.map(\.jobId) == queued.map(\.jobId) && done.first?.attempts == 1 && done.first?.errors.isEmpty == true)
    }

    @Test func theCascadeQueueIsServedForAdminButNoOutsideWorkerCanTakeOrDropItsJobs() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.itemService)
        let items = try harness.client(.itemService)
        defer { items.close() }
        var stats = JobStatsRequest()
        stats.queue = "cascade"
        #expect(try await items.call(JobQueueRPC.stats, stats).dead == 0)
        var lease = LeaseRequest()
        lease.queue = "cascade"
        let leased = await rpcError { try await items.call(JobQueueRPC.lease, lease) }
        #expect(leased?.code == .failedPrecondition && leased?.message.contains("worked by this service itself") == true)
        var complete = CompleteRequest()
        complete.queue = "cascade"
        complete.jobId = "1"
        let completed = await rpcError { try await items.call(JobQueueRPC.complete, complete) }
        #expect(completed?.code == .failedPrecondition)
        var fail = FailRequest()
        fail.queue = "cascade"
        fail.jobId = "1"
        let failed = await rpcError { try await items.call(JobQueueRPC.fail, fail) }
        #expect(failed?.code == .failedPrecondition)
    }

    static func createRequest(_ name: String) -> CreateItemRequest {
        var request = CreateItemRequest()
        request.name = name
        return request
    }
}
