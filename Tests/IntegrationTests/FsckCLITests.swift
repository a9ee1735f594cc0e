import Clients
import Foundation
import Harness
import Proto
import RPC
import Testing

/// `homepwner fsck` through the real executable against both services on the harness, with the
/// store damaged on disk the ways a crash, a bad disk or a bug would.
@Suite struct FsckCLITests {
    /// An item with one attached photo (owned by it); returns both keys.
    static func itemWithPhoto(_ clients: HomepwnerClients, _ photo: [UInt8]) async throws -> (item: String, image: String) {
        var create = CreateItemRequest()
        create.name = "Lamp"
        let item = try await clients.items.call(ItemServiceRPC.createItem, create)
        var put = PutImageRequest()
        put.ownerKey = item.key
        put.data = photo
        let image = try await clients.images.call(ImageServiceRPC.putImage, put)
        var attach = AttachPhotoRequest()
        attach.itemKey = item.key
        attach.imageKey = image.key
        _ = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
        return (item.key, image.key)
    }

    static func blobPath(_ harness: Harness, _ key: String) -> String {
        harness.dataDirectory + "/images/blobs/\(key.prefix(2))/\(key)"
    }

    static func fsck(_ harness: Harness, _ extra: [String] = []) async throws -> CLITests.Run {
        try await CLITests.homepwner(["fsck", "--grace", "0"] + extra, harness: harness)
    }

    @Test func aCleanStoreIsCleanAndAnOrphanIsFoundThenRepaired() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let photo = try ImageServiceRPCTests.photo("Landscape_3.jpg")
        _ = try await Self.itemWithPhoto(clients, photo)

        let clean = try await Self.fsck(harness)
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        #expect(clean.stdout.contains("1 items, 1 images") && clean.stdout.contains("clean"), "\(clean.stdout)")

        var put = PutImageRequest()
        put.data = photo
        let orphan = try await clients.images.call(ImageServiceRPC.putImage, put)
        // Younger than the default grace: a capture may be about to attach it.
        let young = try await CLITests.homepwner(["fsck"], harness: harness)
        #expect(young.status == 0 && young.stdout.contains("1 unreferenced images younger than --grace"), "\(young.stdout)")

        let found = try await Self.fsck(harness, ["--json"])
        #expect(found.status == 1, "\(found.stdout)\(found.stderr)")
        #expect(found.stdout.contains("\"kind\": \"orphan-image\", \"key\": \"\(orphan.key)\""), "\(found.stdout)")

        let repaired = try await Self.fsck(harness, ["--repair"])
        #expect(repaired.status == 0, "\(repaired.stdout)\(repaired.stderr)")
        #expect(repaired.stdout.contains("orphan-image \(orphan.key)") && repaired.stdout.contains("repaired: deleted"))
        var stat = StatImageRequest()
        stat.key = orphan.key
        await #expect(throws: RPCError.self) { _ = try await clients.images.call(ImageServiceRPC.statImage, stat) }
        let after = try await Self.fsck(harness)
        #expect(after.status == 0, "\(after.stdout)")
    }

    @Test func aMissingBlobACorruptedBlobAndALostPhotoAreFound() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let photo = try ImageServiceRPCTests.photo("Landscape_3.jpg")
        let missing = try await Self.itemWithPhoto(clients, photo)
        let corrupted = try await Self.itemWithPhoto(clients, photo)
        let lost = try await Self.itemWithPhoto(clients, photo)

        try FileManager.default.removeItem(atPath: Self.blobPath(harness, missing.image))
        let handle = try #require(FileHandle(forUpdatingAtPath: Self.blobPath(harness, corrupted.image)))
        try handle.seek(toOffset: UInt64(photo.count / 2))
        try handle.write(contentsOf: Data([photo[photo.count / 2] ^ 0xFF]))
        try handle.close()
        var delete = DeleteImageRequest()
        delete.key = lost.image
        _ = try await clients.images.call(ImageServiceRPC.deleteImage, delete)
        // A restart, so that no cached copy hides what is on disk.
        try harness.restart(.imageService)

        let found = try await Self.fsck(harness)
        #expect(found.status == 1, "\(found.stdout)\(found.stderr)")
        #expect(found.stdout.contains("damaged-image \(missing.image)"), "\(found.stdout)")
        #expect(found.stdout.contains("damaged-image \(corrupted.image)"), "\(found.stdout)")
        #expect(found.stdout.contains("missing-blobs image-service"), "\(found.stdout)")
        #expect(found.stdout.contains("missing-photo \(lost.image) (item \(lost.item))"), "\(found.stdout)")

        let repaired = try await Self.fsck(harness, ["--repair"])
        #expect(repaired.stdout.contains("missing-photo \(lost.image) (item \(lost.item)): the item lists this photo and the image "
            + "store does not have it — repaired: detached from the item"), "\(repaired.stdout)")
        var get = GetItemRequest()
        get.key = lost.item
        #expect(try await clients.items.call(ItemServiceRPC.getItem, get).photoKeys.isEmpty)
        // Damaged blobs are reported, not repaired: nothing can bring their bytes back.
        #expect(repaired.status == 1)
    }
}
