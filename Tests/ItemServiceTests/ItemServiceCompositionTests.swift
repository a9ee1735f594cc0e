import Foundation
import ItemService
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport

/// item-service's composition: what its factory builds, in which order it starts and stops.
@Suite struct ItemServiceCompositionTests {
    static func configuration(_ folder: TemporaryFolder) -> ItemServiceConfiguration {
        ItemServiceConfiguration(
            rpcEndpoint: folder.endpoint("item"), eventsEndpoint: folder.endpoint("item-events"),
            dataDirectory: folder.path + "/data", imageServiceEndpoint: folder.endpoint("image"))
    }

    @Test func partsStartTheFaultWatchThenTheStoreAndHostLastSoTheHostDrainsBeforeTheCascadeAndTheStoreStop() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let composition = try ItemServiceHost.make(Self.configuration(folder), context: testContext, logger: testLogger)
        // stop() goes from the last to the first; a storage fault stops all the others.
        #expect(composition.services.map(\.name) == ["fault-watch", "item-store", "item-jobs-reader", "item-reader", "backup-snapshots", "image-service-client", "job-sweeper", "cascade", "item-service"])
        #expect(composition.host === composition.services.last as? ServiceHost)
    }

    @Test func aFactoryOnlyCalledOpensNothingAndBindsNothing() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let idle = try ItemServiceHost.make(Self.configuration(folder), context: testContext, logger: testLogger)
        let store = try #require(idle.first(ItemStoreQueue.self))
        // The store's thread would have created the database; the server's would have bound.
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/data/items/items.db"))
        #expect(idle.host.rpcEndpoints.isEmpty)
        var refused: (any Error)?
        do {
            _ = try await store.perform { try $0.create(createRequest("Early"), now: 1) }
        } catch {
            refused = error
        }
        #expect(refused as? ItemStoreError == .closed)

        // A second composition of the same folder and endpoints starts and serves.
        let running = try startItemService(in: folder)
        let client = try itemClient(folder)
        defer { client.close() }
        let created = try await client.call(ItemServiceRPC.createItem, createRequest("Spork"))
        running.stop()
        // The first, never started, stops as a no-op.
        idle.stop()
        let again = try startItemService(in: folder)
        defer { again.stop() }
        var get = GetItemRequest()
        get.key = created.key
        #expect(try await client.call(ItemServiceRPC.getItem, get, options: .init(timeoutMilliseconds: 10_000)).name == "Spork")
    }
}
