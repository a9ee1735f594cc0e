import Dispatch
import Foundation
@testable import ItemService
import Proto
import RPC
import RPCTestSupport
import Runtime
import Synchronization
import Testing
import ZMQ

/// What the inventory methods publish, and where valuation and readiness run.
extension InventoryRPCTests {
    @Test func locationCategoryAndPolicyChangesArePublished() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let subscriber = try Socket(testContext, .sub)
        defer { subscriber.close() }
        for prefix in ["location.", "category.", "policy."] { try subscriber.subscribe(Array(prefix.utf8)) }
        try subscriber.connect(folder.endpoint("item-events"))
        var received: [(topic: String, body: [UInt8])] = []
        func drain() throws {
            while let frames = try subscriber.receive(dontWait: true) {
                received.append((String(decoding: frames[0], as: UTF8.self), frames[1]))
            }
        }

        // A subscription takes effect asynchronously: update the policy until its event arrives.
        var policy = UpdatePolicyRequest()
        policy.updateMask = ["insurer"]
        policy.policy = Policy()
        var rounds = 0
        while received.isEmpty && rounds < 200 {
            rounds += 1
            policy.policy!.insurer = "Insurer \(rounds)"
            _ = try await client.call(ItemServiceRPC.updatePolicy, policy)
            try await Task.sleep(for: .milliseconds(20))
            try drain()
        }
        let policyEvent = try PolicyEvent(serializedBytes: try #require(received.last).body)
        #expect(received.last?.topic == EventTopic.policyUpdated)
        #expect(policyEvent.policy?.insurer == "Insurer \(rounds)")
        #expect(policyEvent.atMs > 0)
        received.removeAll()

        var create = locationRequest("Garage")
        create.key = UUID().uuidString.lowercased()
        let garage = try await client.call(ItemServiceRPC.createLocation, create)
        // A repeat of the same create changes nothing and publishes nothing.
        _ = try await client.call(ItemServiceRPC.createLocation, create)
        var rename = UpdateLocationRequest()
        rename.key = garage.key
        rename.name = "Workshop"
        rename.updateMask = ["name"]
        _ = try await client.call(ItemServiceRPC.updateLocation, rename)
        var deleteLocation = DeleteLocationRequest()
        deleteLocation.key = garage.key
        _ = try await client.call(ItemServiceRPC.deleteLocation, deleteLocation)

        var category = categoryRequest("Tools", years: 10, floor: 10)
        category.key = UUID().uuidString.lowercased()
        let tools = try await client.call(ItemServiceRPC.createCategory, category)
        _ = try await client.call(ItemServiceRPC.createCategory, category)
        var change = UpdateCategoryRequest()
        change.key = tools.key
        change.usefulLifeYears = 8
        change.updateMask = ["useful_life_years"]
        _ = try await client.call(ItemServiceRPC.updateCategory, change)
        var deleteCategory = DeleteCategoryRequest()
        deleteCategory.key = tools.key
        _ = try await client.call(ItemServiceRPC.deleteCategory, deleteCategory)

        let end = ContinuousClock.now + .seconds(10)
        while received.count < 6 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(10))
            try drain()
        }
        #expect(received.map(\.topic) == [
            EventTopic.locationCreated, EventTopic.locationUpdated, EventTopic.locationDeleted,
            EventTopic.categoryCreated, EventTopic.categoryUpdated, EventTopic.categoryDeleted,
        ])
        guard received.count == 6 else { return }
        let locations = try received[0..<3].map { try LocationEvent(serializedBytes: $0.body) }
        #expect(locations.map(\.key) == [garage.key, garage.key, garage.key])
        #expect(locations.map { $0.location?.name } == ["Garage", "Workshop", "Workshop"])
        #expect(locations.map { $0.location?.version } == [1, 2, 2])
        let categories = try received[3...].map { try CategoryEvent(serializedBytes: $0.body) }
        #expect(categories.map(\.key) == [tools.key, tools.key, tools.key])
        #expect(categories.map { $0.category?.usefulLifeYears } == [10, 8, 8])
        #expect(categories.allSatisfy { $0.atMs > 0 })
    }

    /// GetValuation and GetReadiness read every item in scope: they run on a read-only
    /// connection of their own, so the store's calls are answered while one is under way.
    @Test func aValuationUnderWayHoldsUpNoItemCall() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = ItemStoreQueue(path: path)
        try store.start()
        defer { store.close() }
        let reader = ItemReaderQueue(itemReaderOf: path)
        try reader.start()
        defer { reader.close() }
        let host = try ServiceHost(
            name: "item-service", context: testContext, rpcEndpoints: [folder.endpoint("item")], logger: testLogger)
        defer { host.stop() }
        let images = ClientConnection(name: "image-service-client", context: testContext, endpoint: folder.endpoint("no-image-service"))
        try images.start()
        defer { images.stop() }
        ItemServiceHandlers.register(
            on: host, store: store, reader: reader, clock: SystemClock(), photoCheck: PhotoCheck(connection: images), deleted: {})
        try host.start()
        let client = try itemClient(folder)
        defer { client.close() }

        var priced = createRequest("Lathe")
        priced.replacementValue = Money(currency: "USD", minorUnits: 150_000)
        _ = try await client.call(ItemServiceRPC.createItem, priced)
        // The reader's thread is busy (a valuation of 100,000 items, say) until released.
        let release = DispatchSemaphore(value: 0)
        reader.submit({ _ in release.wait() }, then: { _ in })
        let answered = AnsweredFlag()
        let valuation = Task {
            defer { answered.value.store(true, ordering: .releasing) }
            return try await client.call(ItemServiceRPC.getValuation, GetValuationRequest())
        }
        let readiness = Task { try await client.call(ItemServiceRPC.getReadiness, GetReadinessRequest()) }

        // Meanwhile the store answers: a create, a read and a list.
        priced.name = "Band saw"
        priced.replacementValue = Money(currency: "USD", minorUnits: 90_000)
        let saw = try await client.call(ItemServiceRPC.createItem, priced, options: .init(timeoutMilliseconds: 5000, retry: .none))
        var get = GetItemRequest()
        get.key = saw.key
        #expect(try await client.call(ItemServiceRPC.getItem, get).name == "Band saw")
        #expect(try await client.call(ItemServiceRPC.listItems, ListItemsRequest()).items.count == 2)
        // …while the valuation waits for the reader.
        let answeredEarly = answered.value.load(ordering: .acquiring)
        #expect(!answeredEarly)
        release.signal()

        // Once free, the reader sees every commit made before its read began.
        let totals = try await valuation.value.total
        #expect(totals?.itemCount == 2)
        #expect(totals?.replacementCost?.minorUnits == 240_000)
        #expect(try await readiness.value.overall?.itemCount == 2)
    }
}

/// Set once a call has been answered.
private final class AnsweredFlag: Sendable {
    let value = Atomic<Bool>(false)
}
