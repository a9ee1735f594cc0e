import Foundation
import Harness
import ItemService
import JPEG
import Proto
import RPC
import RPCTestSupport
import Locking
import Synchronization
import Testing
import TestSupport

/// After an item is deleted, no image owned by it or attached only to it exists once the
/// cascade has run, whatever the order in which deletes, cascades, puts, uploads and attaches
/// arrive; AttachPhoto takes only images that exist and belong to the item (or to no owner).
/// Against the real item and image services of the harness.
@Suite struct CascadeOrderTests {
    static let patient = CallOptions(timeoutMilliseconds: 30_000)

    /// A small gradient JPEG, made here (`seed` varies its bytes).
    static func jpeg(width: Int = 48, height: Int = 32, seed: Int = 0) throws -> [UInt8] {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8((x * 5 + seed) & 0xFF), UInt8((y * 7 + seed * 3) & 0xFF), 90] }
        }
        return try JPEG.encode(RGBImage(width: width, height: height, pixels: pixels), quality: 85)
    }

    static func put(_ images: RPCClient, owner: String, seed: Int = 0) async throws -> ImageInfo {
        var request = PutImageRequest()
        request.data = try jpeg(seed: seed)
        request.ownerKey = owner
        return try await images.call(ImageServiceRPC.putImage, request, options: patient)
    }

    static func create(_ items: RPCClient, _ name: String) async throws -> Item {
        var request = CreateItemRequest()
        request.name = name
        return try await items.call(ItemServiceRPC.createItem, request, options: patient)
    }

    static func delete(_ items: RPCClient, _ key: String) async throws {
        var request = DeleteItemRequest()
        request.key = key
        _ = try await items.call(ItemServiceRPC.deleteItem, request, options: patient)
    }

    static func get(_ items: RPCClient, _ key: String) async throws -> Item {
        var request = GetItemRequest()
        request.key = key
        return try await items.call(ItemServiceRPC.getItem, request, options: patient)
    }

    static func attach(_ items: RPCClient, _ image: String, to item: String) async throws -> Item {
        var request = AttachPhotoRequest()
        request.itemKey = item
        request.imageKey = image
        return try await items.call(ItemServiceRPC.attachPhoto, request, options: .init(timeoutMilliseconds: 30_000, retry: .none))
    }

    static func exists(_ images: RPCClient, _ key: String) async throws -> Bool {
        var request = StatImageRequest()
        request.key = key
        let error = await rpcError { try await images.call(ImageServiceRPC.statImage, request, options: patient) }
        if let error, error.code != .notFound { throw error }
        return error == nil
    }

    static func owned(by owner: String, _ images: RPCClient) async throws -> [ImageInfo] {
        var request = ListImagesRequest()
        request.ownerKey = owner
        return try await images.call(ImageServiceRPC.listImages, request, options: patient).images
    }

    static func waitForCascades(_ items: RPCClient) async throws {
        let end = ContinuousClock.now + .seconds(60)
        while try await ItemCascadeTests.pending(items) > 0 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await ItemCascadeTests.pending(items) == 0)
    }

    /// Puts racing a delete, and what they got.
    final class RacingPuts: Sendable {
        struct Outcomes: Sendable {
            var stored: [String] = []
            var refused = 0
            var unexpected: [String] = []
        }

        let outcomes = Locked(Outcomes())
        let stop = Atomic(false)

        /// Puts for `owner`, one after another, until `stop` is set.
        func run(_ images: RPCClient, owner: String) async {
            var seed = 0
            while !stop.load(ordering: .acquiring) {
                seed += 1
                do {
                    let info = try await CascadeOrderTests.put(images, owner: owner, seed: seed)
                    outcomes.withLock { $0.stored.append(info.key) }
                } catch {
                    let refused = (error as? RPCError)?.code == .failedPrecondition
                    outcomes.withLock { state in
                        if refused { state.refused += 1 } else { state.unexpected.append("\(error)") }
                    }
                }
            }
        }
    }

    @Test func imagesStoredForAnItemAfterItsDeleteNeverOutliveItsCascade() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        let item = try await Self.create(clients.items, "Doomed Bear")
        _ = try await Self.put(clients.images, owner: item.key)
        // An upload begun (all bytes sent) before the delete, committed after its cascade.
        let data = try Self.jpeg(width: 200, height: 150)
        var begin = BeginUploadRequest()
        begin.ownerKey = item.key
        begin.totalSize = Int64(data.count)
        let ticket = try await clients.images.call(ImageServiceRPC.beginUpload, begin, options: Self.patient)
        var append = AppendUploadRequest()
        append.uploadId = ticket.uploadId
        append.data = data
        _ = try await clients.images.call(ImageServiceRPC.appendUpload, append, options: Self.patient)

        // Puts for the item on a connection of their own, before, during and after the delete
        // and its cascade.
        let racer = try harness.client(.imageService)
        defer { racer.close() }
        let racing = RacingPuts()
        let puts = Task { await racing.run(racer, owner: item.key) }
        let end = ContinuousClock.now + .seconds(60)
        while racing.outcomes.withLock({ $0.stored.count }) < 3 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Self.delete(clients.items, item.key)
        try await Self.waitForCascades(clients.items)
        while racing.outcomes.withLock({ $0.refused }) < 3 && ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(5)) }
        racing.stop.store(true, ordering: .releasing)
        await puts.value

        let raced = racing.outcomes.withLock { $0 }
        #expect(raced.unexpected.isEmpty, "\(raced.unexpected)")
        #expect(raced.refused >= 3, "the puts after the cascade were not refused (\(raced.stored.count) stored)")
        let late = await rpcError { try await Self.put(clients.images, owner: item.key) }
        #expect(late?.code == .failedPrecondition && late?.message.contains(item.key) == true, "\(String(describing: late))")
        let lateBegin = await rpcError { try await clients.images.call(ImageServiceRPC.beginUpload, begin, options: Self.patient) }
        #expect(lateBegin?.code == .failedPrecondition)
        var commit = CommitUploadRequest()
        commit.uploadId = ticket.uploadId
        let lateCommit = await rpcError { try await clients.images.call(ImageServiceRPC.commitUpload, commit, options: Self.patient) }
        #expect(lateCommit?.code == .failedPrecondition, "\(String(describing: lateCommit))")
        // Nothing of the item is left: not the puts that were stored before the cascade.
        #expect(try await Self.owned(by: item.key, clients.images).isEmpty)
        var survivors: [String] = []
        for key in raced.stored {
            if try await Self.exists(clients.images, key) { survivors.append(key) }
        }
        #expect(survivors.isEmpty, "\(survivors.count) of \(raced.stored.count) racing puts outlived the cascade")
    }

    @Test func photosOnlyTheDeletedItemHeldGoWithItAndItsOwnImagesLeaveOtherItems() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        let doomed = try await Self.create(clients.items, "Doomed")
        let owner = try await Self.create(clients.items, "Owner")
        let holder = try await Self.create(clients.items, "Holder")
        let sharer = try await Self.create(clients.items, "Sharer")
        let foreignOnlyHere = try await Self.put(clients.images, owner: owner.key, seed: 1).key
        let ownerlessShared = try await Self.put(clients.images, owner: "", seed: 2).key
        let mineShownElsewhere = try await Self.put(clients.images, owner: doomed.key, seed: 3).key
        let mineUnattached = try await Self.put(clients.images, owner: doomed.key, seed: 4).key
        let ownerlessOnlyHere = try await Self.put(clients.images, owner: "", seed: 5).key
        let foreignShared = try await Self.put(clients.images, owner: owner.key, seed: 6).key

        // Attachments as a store written before AttachPhoto checked owners can hold them.
        await offThePool { harness.stop(.itemService) }
        do {
            let store = try ItemStore(path: harness.dataDirectory + "/items/items.db")
            for (item, image) in [
                (doomed, foreignOnlyHere), (doomed, ownerlessShared), (doomed, mineShownElsewhere), (doomed, ownerlessOnlyHere),
                (doomed, foreignShared), (sharer, ownerlessShared), (holder, mineShownElsewhere), (owner, foreignShared),
            ] {
                var attach = AttachPhotoRequest()
                attach.itemKey = item.key
                attach.imageKey = image
                _ = try store.attachPhoto(attach, now: 1)
            }
            try store.close()
        }
        try harness.start(.itemService)
        try await Self.delete(clients.items, doomed.key)
        try await Self.waitForCascades(clients.items)

        for gone in [mineShownElsewhere, mineUnattached, ownerlessOnlyHere] {
            #expect(try await Self.exists(clients.images, gone) == false, "\(gone) outlived the item it was a photo of")
        }
        for kept in [ownerlessShared, foreignShared] {
            #expect(try await Self.exists(clients.images, kept), "\(kept) is another item's photo too, yet was deleted")
        }
        // Another item's image, shown only by the deleted one: it is its owner's, and goes with it.
        #expect(try await Self.exists(clients.images, foreignOnlyHere), "\(foreignOnlyHere) belongs to another item, yet was deleted")
        let held = try await Self.get(clients.items, holder.key)
        #expect(held.photoKeys.isEmpty && held.primaryPhotoKey.isEmpty, "\(held.photoKeys) still shows a deleted image")
        #expect(try await Self.get(clients.items, sharer.key).photoKeys == [ownerlessShared])
        #expect(try await Self.get(clients.items, owner.key).photoKeys == [foreignShared])
    }

    @Test func attachPhotoTakesOnlyImagesOfTheItemOrOfNoOneAndNeverUnchecked() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        let item = try await Self.create(clients.items, "Shiny Mac")
        let other = try await Self.create(clients.items, "Rusty Spork")
        let own = try await Self.put(clients.images, owner: item.key, seed: 1).key
        let ownerless = try await Self.put(clients.images, owner: "", seed: 2).key
        let foreign = try await Self.put(clients.images, owner: other.key, seed: 3).key
        let later = try await Self.put(clients.images, owner: item.key, seed: 4).key

        #expect(try await Self.attach(clients.items, own, to: item.key).photoKeys == [own])
        #expect(try await Self.attach(clients.items, ownerless, to: item.key).photoKeys == [own, ownerless])
        let wrongOwner = await rpcError { try await Self.attach(clients.items, foreign, to: item.key) }
        #expect(wrongOwner?.code == .failedPrecondition && wrongOwner?.message.contains(other.key) == true)
        let missing = UUID().uuidString.lowercased()
        let unknown = await rpcError { try await Self.attach(clients.items, missing, to: item.key) }
        #expect(unknown?.code == .notFound && unknown?.message.contains(missing) == true)

        await offThePool { harness.stop(.imageService) }
        let down = await rpcError { try await Self.attach(clients.items, later, to: item.key) }
        #expect(down?.code == .unavailable, "\(String(describing: down))")
        #expect(try await Self.get(clients.items, item.key).photoKeys == [own, ownerless])
        // While the image service is down, the item goes, and its ownerless photo with it: no
        // other item may take that photo meanwhile, or it would point at nothing afterwards.
        try await Self.delete(clients.items, item.key)
        let taken = await rpcError { try await Self.attach(clients.items, ownerless, to: other.key) }
        #expect(taken?.code == .failedPrecondition && taken?.message.contains(item.key) == true, "\(String(describing: taken))")

        try harness.start(.imageService)
        try await Self.waitForCascades(clients.items)
        #expect(try await Self.exists(clients.images, ownerless) == false)
        #expect(try await Self.get(clients.items, other.key).photoKeys.isEmpty)
        #expect(try await Self.attach(clients.items, foreign, to: other.key).photoKeys == [foreign])
    }

    @Test func anImageStoredWithTheItemKeyInUpperCaseIsTheItemsPhotoAndGoesWithIt() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        let item = try await Self.create(clients.items, "Shiny Mac")
        let upper = item.key.uppercased()
        let attached = try await Self.put(clients.images, owner: upper, seed: 1)
        let unattached = try await Self.put(clients.images, owner: upper, seed: 2)
        #expect(attached.ownerKey == item.key && unattached.ownerKey == item.key)
        #expect(try await Self.attach(clients.items, attached.key, to: item.key).photoKeys == [attached.key])
        // The originals: the thumbnail worker may have stored their thumbnails (same owner) by now.
        let originals = try await Self.owned(by: upper, clients.images).filter { $0.kind == .original }
        #expect(Set(originals.map(\.key)) == [attached.key, unattached.key])

        try await Self.delete(clients.items, item.key)
        try await Self.waitForCascades(clients.items)
        #expect(try await Self.exists(clients.images, attached.key) == false)
        #expect(try await Self.exists(clients.images, unattached.key) == false)
        let late = await rpcError { try await Self.put(clients.images, owner: upper, seed: 3) }
        #expect(late?.code == .failedPrecondition && late?.message.contains(item.key) == true, "\(String(describing: late))")
    }
}
