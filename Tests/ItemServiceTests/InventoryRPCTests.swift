import Foundation
import ItemService
import Proto
import RPC
import RPCTestSupport
import Runtime
import Testing
import ZMQ

/// The inventory methods (locations, categories, policy, photo roles, valuation, readiness) over
/// real sockets, with their status codes.
@Suite struct InventoryRPCTests {
    @Test func locationsCategoriesAndThePolicyOverTheWire() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }

        var home = locationRequest("Home", kind: .home)
        home.key = UUID().uuidString.lowercased()
        let created = try await client.call(ItemServiceRPC.createLocation, home)
        // A repeat with the same key answers the first location.
        #expect(try await client.call(ItemServiceRPC.createLocation, home) == created)
        let kitchen = try await client.call(ItemServiceRPC.createLocation, locationRequest("Kitchen", parent: created.key))
        var get = GetLocationRequest()
        get.key = kitchen.key
        #expect(try await client.call(ItemServiceRPC.getLocation, get).path == "Home / Kitchen")

        var item = createRequest("Kettle")
        item.locationKey = kitchen.key
        item.purchasePrice = Money(currency: "", minorUnits: 4_999)
        let kettle = try await client.call(ItemServiceRPC.createItem, item)
        #expect(kettle.locationKey == kitchen.key && kettle.quantity == 1)
        let list = try await client.call(ItemServiceRPC.listLocations, ListLocationsRequest())
        #expect(list.locations.map(\.subtreeItemCount) == [1, 1])

        var delete = DeleteLocationRequest()
        delete.key = kitchen.key
        let refused = await rpcError { try await client.call(ItemServiceRPC.deleteLocation, delete) }
        #expect(refused?.code == .failedPrecondition && refused?.message.contains("1 item") == true)
        var move = UpdateLocationRequest()
        move.key = created.key
        move.updateMask = ["parent_key"]
        move.parentKey = kitchen.key
        #expect(await rpcError { try await client.call(ItemServiceRPC.updateLocation, move) }?.code == .failedPrecondition)
        move.updateMask = ["kind"]
        move.kind = LocationKind(rawValue: 42)
        #expect(await rpcError { try await client.call(ItemServiceRPC.updateLocation, move) }?.code == .invalidArgument)

        let category = try await client.call(ItemServiceRPC.createCategory, categoryRequest("Kitchenware", years: 10, floor: 10))
        #expect(category.depreciation == .straightLine && category.usefulLifeYears == 10)
        let twin = await rpcError { try await client.call(ItemServiceRPC.createCategory, categoryRequest("KITCHENWARE")) }
        #expect(twin?.code == .failedPrecondition)
        var noLife = categoryRequest("Tools")
        noLife.depreciation = .straightLine
        let life = await rpcError { try await client.call(ItemServiceRPC.createCategory, noLife) }
        #expect(life?.code == .invalidArgument && life?.message.contains("useful_life_years") == true)
        var assign = UpdateItemRequest()
        assign.key = kettle.key
        assign.updateMask = ["category_key"]
        assign.categoryKey = category.key
        #expect(try await client.call(ItemServiceRPC.updateItem, assign).categoryKey == category.key)
        var dropCategory = DeleteCategoryRequest()
        dropCategory.key = category.key
        #expect(await rpcError { try await client.call(ItemServiceRPC.deleteCategory, dropCategory) }?.code == .failedPrecondition)
        #expect(try await client.call(ItemServiceRPC.listCategories, ListCategoriesRequest()).categories.map(\.itemCount) == [1])

        let policy = try await client.call(ItemServiceRPC.getPolicy, GetPolicyRequest())
        #expect(policy.currency == "USD" && policy.warnAtPercent == 80 && policy.version == 0)
        var update = UpdatePolicyRequest()
        update.updateMask = ["currency", "insurer"]
        update.policy = { var p = Policy(); p.currency = "eur"; p.insurer = "Mutuelle Générale"; return p }()
        let changed = try await client.call(ItemServiceRPC.updatePolicy, update)
        #expect(changed.currency == "EUR" && changed.insurer == "Mutuelle Générale" && changed.version == 1)
        update.updateMask = ["currency"]
        update.policy?.currency = "EURO"
        #expect(await rpcError { try await client.call(ItemServiceRPC.updatePolicy, update) }?.code == .invalidArgument)
        update.expectedVersion = 5
        update.policy?.currency = "GBP"
        #expect(await rpcError { try await client.call(ItemServiceRPC.updatePolicy, update) }?.code == .aborted)

        var valuation = GetValuationRequest()
        valuation.asOf = "2026-01-01"
        let value = try await client.call(ItemServiceRPC.getValuation, valuation)
        #expect(value.currency == "EUR" && value.total?.replacementCost?.minorUnits == 4_999)
        let readiness = try await client.call(ItemServiceRPC.getReadiness, GetReadinessRequest())
        #expect(readiness.overall?.itemCount == 1 && readiness.locations.map(\.name) == ["Home", "Home / Kitchen"])

        var role = SetPhotoRoleRequest()
        role.itemKey = kettle.key
        role.imageKey = UUID().uuidString.lowercased()
        role.role = .receipt
        let notAttached = await rpcError { try await client.call(ItemServiceRPC.setPhotoRole, role) }
        #expect(notAttached?.code == .failedPrecondition && notAttached?.message.contains("attach it") == true)
        var search = ListItemsRequest()
        search.search = "kett"
        search.asOf = "today"
        let found = try await client.call(ItemServiceRPC.listItems, search)
        #expect(found.items.map(\.key) == [kettle.key] && found.items[0].valuation?.basis == .purchasePrice)
    }
}
