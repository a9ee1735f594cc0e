import Foundation
import Harness
import Proto
import RPC
import Testing

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

        harness.stop(.imageService)
        var delete = DeleteItemRequest()
        delete.key = doomed.key
        _ = try await clients.items.call(ItemServiceRPC.deleteItem, delete)
        #expect(try await Self.pending(clients.items) == 1)
        // The item service restarts while the cascade is owed; the outbox is on disk.
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

    static func createRequest(_ name: String) -> CreateItemRequest {
        var request = CreateItemRequest()
        request.name = name
        return request
    }
}
