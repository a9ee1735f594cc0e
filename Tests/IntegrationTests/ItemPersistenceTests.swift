import Foundation
import Harness
import Proto
import RPC
import Testing

/// Acknowledged item writes survive the process: a SIGKILL of the real item-service
/// executable, and restarts in the harness.
@Suite struct ItemPersistenceTests {
    static func launchItemService(_ data: String) throws -> ExecutableTests.Launched {
        try ExecutableTests.launch("item-service", [
            "--rpc", "ipc://\(data)/rpc.sock", "--events", "ipc://\(data)/events.sock", "--data-dir", data,
            "--image-service", "ipc://\(data)/image.sock",
        ], endpoint: "ipc://\(data)/rpc.sock")
    }

    /// Patient options: the executable may still be starting.
    static let patient = CallOptions(timeoutMilliseconds: 20_000, retry: RetryPolicy(maxAttempts: 40, initialBackoffMilliseconds: 100))

    @Test func acknowledgedWritesSurviveSIGKILL() async throws {
        let data = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try Self.launchItemService(data)
        defer { if first.process.isRunning { first.process.terminate() } }
        let client = try RPCClient(context: ExecutableTests.context, endpoint: first.endpoint)
        defer { client.close() }

        var created: [Item] = []
        for index in 0..<20 {
            var request = CreateItemRequest()
            request.name = "Item \(index)"
            request.serialNumber = "\(index % 10)A\(index % 10)B"
            request.valueInDollars = Int64(index)
            created.append(try await client.call(ItemServiceRPC.createItem, request, options: Self.patient))
        }
        var move = MoveItemRequest()
        move.fromIndex = 19
        move.toIndex = 0
        _ = try await client.call(ItemServiceRPC.moveItem, move, options: Self.patient)
        var update = UpdateItemRequest()
        update.key = created[5].key
        update.updateMask = ["name"]
        update.name = "Renamed"
        let updated = try await client.call(ItemServiceRPC.updateItem, update, options: Self.patient)

        // Every write above was acknowledged; kill without warning.
        kill(first.process.processIdentifier, SIGKILL)
        #expect(await ExecutableTests.waitForExit(first.process, seconds: 10))
        #expect(first.process.terminationReason == .uncaughtSignal)

        let second = try Self.launchItemService(data)
        defer { if second.process.isRunning { second.process.terminate() } }
        var list = ListItemsRequest()
        list.pageSize = 100
        let items = try await client.call(ItemServiceRPC.listItems, list, options: Self.patient).items
        let expected = [created[19]] + created.prefix(19).map { $0.key == updated.key ? updated : $0 }
        #expect(items == expected)
        kill(second.process.processIdentifier, SIGTERM)
        #expect(await ExecutableTests.waitForExit(second.process, seconds: 10))
    }

    @Test func seedDatabaseIsCopiedOnFirstStartOnly() async throws {
        let seedFolder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: seedFolder) }
        // A seed made by a first item-service, then stopped.
        let maker = try Self.launchItemService(seedFolder)
        defer { if maker.process.isRunning { maker.process.terminate() } }
        let makerClient = try RPCClient(context: ExecutableTests.context, endpoint: maker.endpoint)
        defer { makerClient.close() }
        var request = CreateItemRequest()
        request.name = "Seeded Bear"
        request.serialNumber = "1A2B"
        let seeded = try await makerClient.call(ItemServiceRPC.createItem, request, options: Self.patient)
        kill(maker.process.processIdentifier, SIGTERM)
        #expect(await ExecutableTests.waitForExit(maker.process, seconds: 10))

        let data = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let arguments = [
            "--rpc", "ipc://\(data)/rpc.sock", "--events", "ipc://\(data)/events.sock", "--data-dir", data,
            "--image-service", "ipc://\(data)/image.sock", "--seed-db", seedFolder + "/items/items.db",
        ]
        let first = try ExecutableTests.launch("item-service", arguments, endpoint: "ipc://\(data)/rpc.sock")
        defer { if first.process.isRunning { first.process.terminate() } }
        let client = try RPCClient(context: ExecutableTests.context, endpoint: first.endpoint)
        defer { client.close() }
        var get = GetItemRequest()
        get.key = seeded.key
        #expect(try await client.call(ItemServiceRPC.getItem, get, options: Self.patient) == seeded)
        var delete = DeleteItemRequest()
        delete.key = seeded.key
        _ = try await client.call(ItemServiceRPC.deleteItem, delete, options: Self.patient)
        kill(first.process.processIdentifier, SIGTERM)
        #expect(await ExecutableTests.waitForExit(first.process, seconds: 10))

        // A database exists now: the seed is not copied over it again.
        let second = try ExecutableTests.launch("item-service", arguments, endpoint: "ipc://\(data)/rpc.sock")
        defer { if second.process.isRunning { second.process.terminate() } }
        let stats = try await client.call(ItemServiceRPC.stats, ItemStatsRequest(), options: Self.patient)
        #expect(stats.itemCount == 0)
        kill(second.process.processIdentifier, SIGTERM)
        #expect(await ExecutableTests.waitForExit(second.process, seconds: 10))
    }

    @Test func itemsSurviveAnItemServiceRestartInTheHarness() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let client = try harness.client(.itemService)
        defer { client.close() }
        var request = CreateItemRequest()
        request.random = true
        let item = try await client.call(ItemServiceRPC.createItem, request)
        try harness.restart(.itemService)
        var get = GetItemRequest()
        get.key = item.key
        #expect(try await client.call(ItemServiceRPC.getItem, get, options: .init(timeoutMilliseconds: 10_000)) == item)
    }
}
