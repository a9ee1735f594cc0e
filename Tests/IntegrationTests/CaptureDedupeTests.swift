import Digest
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport

/// The same bytes are one photo of an item: item-service decides it in the transaction that
/// attaches, so captures (or attaches) of identical photos at the same moment attach it once.
@Suite struct CaptureDedupeTests {
    static func attach(_ key: String, to item: String, primary: Bool = false, _ suite: CaptureSuite) async throws -> Item {
        var attach = AttachPhotoRequest()
        attach.itemKey = item
        attach.imageKey = key
        attach.makePrimary = primary
        return try await suite.items.call(ItemServiceRPC.attachPhoto, attach, options: .init(timeoutMilliseconds: 30_000))
    }

    static func put(_ data: [UInt8], owner: String, _ suite: CaptureSuite) async throws -> String {
        var put = PutImageRequest()
        put.ownerKey = owner
        put.data = data
        return try await suite.images.call(ImageServiceRPC.putImage, put, options: .init(timeoutMilliseconds: 30_000)).key
    }

    @Test func attachingThePhotoOfContentTheItemHoldsAlreadyAttachesNothingEvenAllAtOnce() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        // Eight images of the same bytes, attached at once.
        var keys: [String] = []
        for _ in 0..<8 { keys.append(try await Self.put(lamp, owner: suite.item, suite)) }
        let answers = try await withThrowingTaskGroup(of: Item.self) { group in
            for key in keys { group.addTask { try await Self.attach(key, to: suite.item, suite) } }
            return try await group.reduce(into: [Item]()) { $0.append($1) }
        }
        let item = try await suite.getItem()
        #expect(item.photoKeys.count == 1, "\(item.photoKeys)")
        let holder = try #require(item.photoKeys.first)
        #expect(answers.allSatisfy { $0.photoKeys == [holder] }, "\(answers.map(\.photoKeys))")
        // One version for the one attach that changed the item.
        #expect(item.version == 2)

        // make_primary of the same content makes the photo that holds it primary.
        let other = try await Self.put(try Fixtures.orientationPhoto("Landscape_2.jpg"), owner: suite.item, suite)
        #expect(try await Self.attach(other, to: suite.item, primary: true, suite).primaryPhotoKey == other)
        let again = try await Self.attach(try #require(keys.last { $0 != holder }), to: suite.item, primary: true, suite)
        #expect(again.photoKeys == [holder, other] && again.primaryPhotoKey == holder)

        // Another item takes the same bytes; and once detached here, the content attaches again.
        var create = CreateItemRequest()
        create.name = "Shelf"
        let shelf = try await suite.items.call(ItemServiceRPC.createItem, create).key
        let ownerless = try await Self.put(lamp, owner: "", suite)
        #expect(try await Self.attach(ownerless, to: shelf, suite).photoKeys == [ownerless])
        var detach = DetachPhotoRequest()
        detach.itemKey = suite.item
        detach.imageKey = holder
        _ = try await suite.items.call(ItemServiceRPC.detachPhoto, detach)
        let next = try #require(keys.first { $0 != holder })
        #expect(try await Self.attach(next, to: suite.item, suite).photoKeys == [other, next])
    }

    @Test func identicalCapturesAtOnceAttachTheirPhotoOnceAndEachNamesIt() async throws {
        // Queued before the worker starts, which then takes as many at once as it runs.
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        var queued: [CaptureJob] = []
        for index in 0..<6 {
            queued.append(try await suite.enqueue { request in
                if index % 2 == 0 {
                    request.source = .library
                    request.sourcePath = "trip/lamp.jpg"
                } else {
                    request.source = .upload
                    request.data = lamp
                }
            })
        }
        try suite.harness.start(.captureWorker)
        var jobs: [CaptureJob] = []
        for job in queued { jobs.append(try await suite.finished(job.jobId)) }
        #expect(jobs.allSatisfy { $0.state == .done }, "\(jobs.map(\.error))")
        let item = try await suite.getItem()
        #expect(item.photoKeys.count == 1, "\(item.photoKeys)")
        #expect(jobs.allSatisfy { $0.originalKey == item.photoKeys.first }, "\(jobs.map(\.originalKey))")
        #expect(jobs.filter { !$0.duplicate }.count == 1, "\(jobs.map(\.duplicate))")
        // The others' stored copies are gone: one image of the item, the photo.
        try await eventuallyEmpty { try await suite.imagesOf(suite.item).filter { $0.key != item.photoKeys.first } }
        #expect(try await suite.info(try #require(item.photoKeys.first)).checksum == SHA256.checksum(lamp))
    }

    @Test func anEditThatComesOutAsAPhotoTheItemHoldsNamesThatPhotoAndLeavesNoOrphan() async throws {
        // The same crop of the same photo twice: the second edit is byte for byte the first,
        // which item-service does not attach again. The job named its own unattached edit as
        // its result and left it stored, owned by the item and in none of its photos.
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        var edit = Edit()
        (edit.cropX, edit.cropY, edit.cropWidth, edit.cropHeight) = (100, 50, 400, 300)
        let first = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit }
        let second = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit; $0.makePrimary = true }
        #expect(first.state == .done && second.state == .done, "\(first.error) \(second.error)")
        let item = try await suite.getItem()
        #expect(item.photoKeys == [first.originalKey, first.editedKey], "\(item.photoKeys)")
        #expect(second.originalKey == first.originalKey && second.editedKey == first.editedKey, "\(second)")
        #expect(item.primaryPhotoKey == first.editedKey)
        try await eventuallyEmpty { try await suite.imagesOf(suite.item).filter { !item.photoKeys.contains($0.key) } }
    }
}
