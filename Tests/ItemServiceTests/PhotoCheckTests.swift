import Foundation
import ItemService
import Proto
import RPC
import RPCTestSupport
import Testing

/// AttachPhoto asks the image service (a fake that knows a few images' owners) before it
/// attaches a new photo, and never attaches one unchecked.
@Suite struct PhotoCheckTests {
    static func attach(_ client: RPCClient, _ image: String, to item: String, primary: Bool = false) async throws -> Item {
        var request = AttachPhotoRequest()
        request.itemKey = item
        request.imageKey = image
        request.makePrimary = primary
        // One attempt: an UNAVAILABLE answer is what the test looks at, not a retry of it.
        return try await client.call(ItemServiceRPC.attachPhoto, request, options: .init(timeoutMilliseconds: 10_000, retry: .none))
    }

    static func get(_ client: RPCClient, _ key: String) async throws -> Item {
        var request = GetItemRequest()
        request.key = key
        return try await client.call(ItemServiceRPC.getItem, request)
    }

    @Test func attachPhotoTakesOnlyAnImageTheImageServiceHasForTheItemOrForNoOne() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let item = try await client.call(ItemServiceRPC.createItem, createRequest("Shiny Mac"))
        let (own, ownerless, foreign, missing) = (
            UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased()
        )
        let fake = CascadeTests.FakeImageService(images: [:], stat: [own: item.key, ownerless: "", foreign: "someone-else"])
        let images = try fake.start(folder.endpoint("image"))
        defer { images.stop() }

        #expect(try await Self.attach(client, own, to: item.key).photoKeys == [own])
        #expect(try await Self.attach(client, ownerless, to: item.key).photoKeys == [own, ownerless])
        let other = await rpcError { try await Self.attach(client, foreign, to: item.key) }
        #expect(other?.code == .failedPrecondition)
        #expect(other?.message.contains(foreign) == true && other?.message.contains("someone-else") == true)
        let unknown = await rpcError { try await Self.attach(client, missing, to: item.key) }
        #expect(unknown?.code == .notFound && unknown?.message.contains(missing) == true)
        // What the item service can tell alone comes first: no item, no question.
        let noItem = await rpcError { try await Self.attach(client, foreign, to: UUID().uuidString.lowercased()) }
        #expect(noItem?.code == .notFound && noItem?.message.contains("no item") == true)
        let stored = try await Self.get(client, item.key)
        #expect(stored.photoKeys == [own, ownerless] && stored.version == 3)
    }

    @Test func attachPhotoAnswersUnavailableAndAttachesNothingWhileTheImageServiceIsDown() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let item = try await client.call(ItemServiceRPC.createItem, createRequest("Rusty Spork"))
        let (first, second) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())

        let down = await rpcError { try await Self.attach(client, first, to: item.key) }
        #expect(down?.code == .unavailable)
        #expect(down?.message.contains(first) == true && down?.message.contains("not attached") == true)
        #expect(try await Self.get(client, item.key) == item)

        let fake = CascadeTests.FakeImageService(images: [:], stat: [first: item.key, second: item.key])
        let images = try fake.start(folder.endpoint("image"))
        _ = try await Self.attach(client, first, to: item.key)
        #expect(try await Self.attach(client, second, to: item.key).photoKeys == [first, second])
        images.stop()
        // Attached already: nothing new to ask about, so a repeat and make_primary still work.
        #expect(try await Self.attach(client, second, to: item.key).version == 3)
        let primary = try await Self.attach(client, second, to: item.key, primary: true)
        #expect(primary.primaryPhotoKey == second && primary.version == 4)
    }
}
