import Dispatch
import Foundation
@testable import ItemService
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport

/// A mutation queued behind other store work past its call's deadline is not applied: its
/// caller was answered DEADLINE_EXCEEDED, and may retry.
@Suite struct StoreQueueDeadlineTests {
    @Test func createQueuedPastItsDeadlineCreatesNothing() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = ItemStoreQueue(path: folder.path + "/items.db")
        try store.start()
        defer { store.close() }
        let reader = ItemReaderQueue(itemReaderOf: folder.path + "/items.db")
        try reader.start()
        defer { reader.close() }
        let host = try ServiceHost(
            name: "item-service", context: testContext, rpcEndpoints: [folder.endpoint("item")], logger: testLogger)
        defer { host.stop() }
        // No image service: CreateItem never asks it.
        let images = ClientConnection(name: "image-service-client", context: testContext, endpoint: folder.endpoint("no-image-service"))
        try images.start()
        defer { images.stop() }
        ItemServiceHandlers.register(
            on: host, store: store, reader: reader, clock: SystemClock(), photoCheck: PhotoCheck(connection: images), deleted: {})
        try host.start()
        let client = try itemClient(folder)
        defer { client.close() }

        // The store's thread is busy (a long transaction, say) until released.
        let release = DispatchSemaphore(value: 0)
        store.submit({ _ in release.wait() }, then: { _ in })
        let late = await rpcError {
            try await client.call(
                ItemServiceRPC.createItem, createRequest("Queued Spork"),
                options: .init(timeoutMilliseconds: 200, retry: .none))
        }
        #expect(late?.code == .deadlineExceeded)
        // The server's deadline counts from when it read the call, which on a loaded machine can
        // be later than the client's: release the store only once the server's has passed too.
        let deadline = ContinuousClock.now + .seconds(10)
        while host.server.stats.deadlineExceeded == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        release.signal()
        while host.server.stats.inFlight > 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(host.server.stats.inFlight == 0)
        #expect(try await store.perform { try allItems($0) }.isEmpty)

        // On time, the same call is applied.
        _ = try await client.call(ItemServiceRPC.createItem, createRequest("Queued Spork"))
        #expect(try await store.perform { try allItems($0) }.map(\.name) == ["Queued Spork"])
    }
}
