@testable import CaptureWorker
import Digest
import Foundation
import Harness
import JPEG
import Proto
import RPC
import Runtime
import Synchronization
import Testing
import TestSupport
import RPCTestSupport
import WorkerRuntime

/// What a capture deletes when it ends without its own photo: only what its job stored, never
/// an image it was given (an upload's `image_key`, which another item may hold) or one that
/// stays attached.
@Suite struct CaptureCleanupTests {
    /// A second item holding the ownerless image `key`.
    static func otherItemHolding(_ key: String, _ suite: CaptureSuite) async throws -> String {
        var create = CreateItemRequest()
        create.name = "Shelf"
        let other = try await suite.items.call(ItemServiceRPC.createItem, create).key
        var attach = AttachPhotoRequest()
        attach.itemKey = other
        attach.imageKey = key
        _ = try await suite.items.call(ItemServiceRPC.attachPhoto, attach)
        return other
    }

    static func photos(of item: String, _ suite: CaptureSuite) async throws -> [String] {
        var get = GetItemRequest()
        get.key = item
        return try await suite.items.call(ItemServiceRPC.getItem, get).photoKeys
    }

    @Test func anOwnerlessUploadThatDuplicatesAPhotoOfTheItemStaysWithTheOtherItemHoldingIt() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        let first = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        #expect(first.state == .done, "\(first.error)")
        // The same bytes stored with no owner, and attached to another item.
        let shared = try await suite.upload(lamp, owner: "")
        let other = try await Self.otherItemHolding(shared.key, suite)

        let again = try await suite.capture { $0.source = .upload; $0.imageKey = shared.key }
        #expect(again.state == .done && again.duplicate && again.originalKey == first.originalKey, "\(again.error)")
        #expect(try await suite.info(shared.key).checksum == SHA256.checksum(lamp), "the shared photo was deleted")
        #expect(try await Self.photos(of: other, suite) == [shared.key])
        #expect(try await suite.getItem().photoKeys == [first.originalKey])
    }

    @Test func anOwnerlessUploadCapturedForAnItemDeletedMeanwhileStaysWithTheOtherItemHoldingIt() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let shared = try await suite.upload(try Fixtures.orientationPhoto("Landscape_2.jpg"), owner: "")
        let other = try await Self.otherItemHolding(shared.key, suite)
        _ = try await suite.enqueue { $0.source = .upload; $0.imageKey = shared.key }
        var lease = LeaseRequest()
        lease.queue = "capture"
        lease.workerId = "test"
        let job = try #require(try await suite.items.call(JobQueueRPC.lease, lease).jobs.first)

        // The handler as the worker runs it, whose decode waits while the test deletes the item:
        // the item is read, then gone by the time the photo is to be attached.
        let (items, images) = (
            ClientConnection(name: "items", context: suite.harness.context, endpoint: suite.harness.endpoint(.itemService)),
            ClientConnection(name: "images", context: suite.harness.context, endpoint: suite.harness.endpoint(.imageService)))
        try items.start()
        try images.start()
        defer {
            items.stop()
            images.stop()
        }
        let decoding = Shared(false), deleted = DispatchSemaphore(value: 0)
        let blocking = BlockingPool(name: "capture-test-blocking", count: 1)
        blocking.start()
        defer { blocking.stop() }
        let handler = CaptureJobHandler(
            items: items, images: images, sources: suite.harness.captureSources, threads: blocking,
            editor: { jpeg, edit in try CaptureWorkerHost.edit(jpeg, edit, background: .white) },
            decoder: { jpeg in
                decoding.withLock { $0 = true }
                deleted.wait()
                try CaptureWorkerHost.decode(jpeg)
            })
        // On threads of its own: the decode blocks one.
        let threads = BlockingPool(name: "capture-test", count: 2)
        threads.start()
        defer { threads.stop() }
        let run = Task(executorPreference: threads) { try await handler.run(job) }
        #expect(try await eventually(within: 30) { decoding.value })
        var delete = DeleteItemRequest()
        delete.key = suite.item
        _ = try await suite.items.call(ItemServiceRPC.deleteItem, delete)
        deleted.signal()
        do {
            _ = try await run.value
            Issue.record("the capture of an item deleted meanwhile succeeded")
        } catch {
            let failure = error as? JobFailure
            #expect(failure?.permanent == true && failure?.message.contains("was deleted while its capture ran") == true, "\(error)")
        }
        #expect(try await suite.info(shared.key).checksum == SHA256.checksum(try Fixtures.orientationPhoto("Landscape_2.jpg")))
        #expect(try await Self.photos(of: other, suite) == [shared.key])
    }
}
