import Foundation
import ItemService
import Proto
import RPC
import Runtime
import Testing
import ZMQ
import RPCTestSupport

/// The ItemService methods over real ipc sockets: status codes, idempotency, paging, events, restarts.
@Suite struct ItemServiceRPCTests {
    @Test func badInputGetsPreciseStatusCodesAndMessages() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let item = try await client.call(ItemServiceRPC.createItem, createRequest("Rusty Spork", serial: "4X7B", value: 42))

        let negative = await rpcError { try await client.call(ItemServiceRPC.createItem, createRequest("Spork", value: -5)) }
        #expect(negative?.code == .invalidArgument)
        #expect(negative?.message == "value_in_dollars must be ≥ 0 (got -5)")
        let empty = await rpcError { try await client.call(ItemServiceRPC.createItem, createRequest("")) }
        #expect(empty?.code == .invalidArgument && empty?.message.contains("name") == true)

        var get = GetItemRequest()
        get.key = "nope"
        let malformed = await rpcError { try await client.call(ItemServiceRPC.getItem, get) }
        #expect(malformed?.code == .invalidArgument && malformed?.message.contains("\"nope\"") == true)
        get.key = UUID().uuidString.lowercased()
        let missing = await rpcError { try await client.call(ItemServiceRPC.getItem, get) }
        #expect(missing?.code == .notFound && missing?.message.contains(get.key) == true)

        var list = ListItemsRequest()
        list.pageToken = "bm90IGEgdG9rZW4"
        let token = await rpcError { try await client.call(ItemServiceRPC.listItems, list) }
        #expect(token?.code == .invalidArgument && token?.message.contains("page_token") == true)
        list.pageToken = ""
        list.pageSize = 5000
        let size = await rpcError { try await client.call(ItemServiceRPC.listItems, list) }
        #expect(size?.code == .invalidArgument && size?.message.contains("(got 5000)") == true)

        var move = MoveItemRequest()
        move.fromIndex = 0
        move.toIndex = 1
        let range = await rpcError { try await client.call(ItemServiceRPC.moveItem, move) }
        #expect(range?.code == .outOfRange && range?.message.contains("to_index 1") == true)

        var update = UpdateItemRequest()
        update.key = item.key
        update.updateMask = ["name"]
        update.name = "Shiny Spork"
        update.expectedVersion = 7
        let stale = await rpcError { try await client.call(ItemServiceRPC.updateItem, update) }
        #expect(stale?.code == .aborted && stale?.message.contains("expected_version 7") == true)
        update.expectedVersion = 1
        #expect(try await client.call(ItemServiceRPC.updateItem, update).version == 2)
    }

    @Test func createWithARepeatedKeyCreatesOnceEvenAcrossRestarts() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let key = UUID().uuidString.lowercased()
        let first = try await client.call(ItemServiceRPC.createItem, createRequest("Fluffy Bear", key: key))
        // A fresh idempotency key each time: only the durable item key can make these safe.
        let again = try await client.call(ItemServiceRPC.createItem, createRequest("Fluffy Bear", key: key))
        #expect(again == first)
        host.stop()
        host = try startItemService(in: folder)
        let afterRestart = try await client.call(
            ItemServiceRPC.createItem, createRequest("Fluffy Bear", key: key), options: .init(timeoutMilliseconds: 10_000))
        #expect(afterRestart == first)
        let stats = try await client.call(ItemServiceRPC.stats, ItemStatsRequest())
        #expect(stats.itemCount == 1)
    }

    @Test func pagingNeverSkipsOrRepeatsWhileItemsAreAdded() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        var existing: [String] = []
        for index in 0..<120 {
            existing.append(try await client.call(ItemServiceRPC.createItem, createRequest("Item \(index)", value: Int64(index % 7))).key)
        }
        for sort in [ItemSort.manual, .name, .value, .created] {
            for descending in [false, true] {
                let adder = Task {
                    let adds = try RPCClient(context: testContext, endpoint: folder.endpoint("item"))
                    defer { adds.close() }
                    for index in 0..<40 {
                        _ = try await adds.call(ItemServiceRPC.createItem, createRequest("Added \(sort.rawValue) \(index)", value: 3))
                    }
                }
                var seen: [String] = []
                var request = ListItemsRequest()
                request.pageSize = 9
                request.sort = sort
                request.descending = descending
                var pages = 0
                repeat {
                    let page = try await client.call(ItemServiceRPC.listItems, request)
                    seen += page.items.map(\.key)
                    request.pageToken = page.nextPageToken
                    // Also adds between pages for sure: names and values on both sides of the cursor.
                    pages += 1
                    for name in ["A \(pages)", "Z \(pages)"] {
                        _ = try await client.call(ItemServiceRPC.createItem, createRequest(name, value: Int64(pages % 7)))
                    }
                } while !request.pageToken.isEmpty
                try await adder.value
                #expect(Set(seen).count == seen.count, "a key repeated (sort \(sort.rawValue), descending \(descending))")
                #expect(Set(existing).isSubset(of: Set(seen)), "an item was skipped (sort \(sort.rawValue), descending \(descending))")
            }
        }
    }

    @Test func aHostThatFailsToStartClosesItsStoreWhenReleased() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        do {
            let configuration = ItemServiceConfiguration(
                rpcEndpoint: "tcp://256.0.0.1:1", eventsEndpoint: folder.endpoint("item-events"),
                dataDirectory: folder.path + "/data", imageServiceEndpoint: folder.endpoint("image"))
            let host = try ItemServiceHost.make(configuration, context: testContext, logger: testLogger)
            #expect(throws: (any Error).self) { try host.start() }
        }
        // The last connection to close checkpoints and removes the WAL file.
        let wal = folder.path + "/data/items/items.db-wal"
        let end = ContinuousClock.now + .seconds(10)
        while FileManager.default.fileExists(atPath: wal) && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!FileManager.default.fileExists(atPath: wal))
        #expect(FileManager.default.fileExists(atPath: folder.path + "/data/items/items.db"))
    }

    @Test func listSortsQueriesAndCounts() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        for (name, serial, value) in [("Rusty Spork", "4X7B", 42), ("shiny Mac", "1A2B", 7), ("Fluffy Bear", "9Z9Z", 99)] {
            _ = try await client.call(ItemServiceRPC.createItem, createRequest(name, serial: serial, value: Int64(value)))
        }
        var request = ListItemsRequest()
        request.sort = .name
        #expect(try await client.call(ItemServiceRPC.listItems, request).items.map(\.name) == ["Fluffy Bear", "Rusty Spork", "shiny Mac"])
        request.sort = .value
        request.descending = true
        let byValue = try await client.call(ItemServiceRPC.listItems, request)
        #expect(byValue.items.map(\.valueInDollars) == [99, 42, 7] && byValue.totalCount == 3)
        request.query = "1a2"
        let found = try await client.call(ItemServiceRPC.listItems, request)
        #expect(found.items.map(\.name) == ["shiny Mac"] && found.totalCount == 1)
        request.query = "SPORK"
        #expect(try await client.call(ItemServiceRPC.listItems, request).items.map(\.name) == ["Rusty Spork"])
        request.query = "%"
        #expect(try await client.call(ItemServiceRPC.listItems, request).totalCount == 0)
    }

    @Test func changesArePublishedAsItemEvents() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let host = try startItemService(in: folder)
        defer { host.stop() }
        let client = try itemClient(folder)
        defer { client.close() }
        let subscriber = try Socket(testContext, .sub)
        defer { subscriber.close() }
        try subscriber.subscribe(Array("item.".utf8))
        try subscriber.connect(folder.endpoint("item-events"))

        // A subscription takes effect asynchronously: create until the first event arrives.
        var received: [(String, ItemEvent)] = []
        var created: [Item] = []
        while received.isEmpty && created.count < 200 {
            created.append(try await client.call(ItemServiceRPC.createItem, createRequest("Item \(created.count)")))
            try await Task.sleep(for: .milliseconds(20))
            while let frames = try subscriber.receive(dontWait: true) {
                received.append((String(decoding: frames[0], as: UTF8.self), try ItemEvent(serializedBytes: frames[1])))
            }
        }
        let item = created.last!
        var update = UpdateItemRequest()
        update.key = item.key
        update.updateMask = ["value_in_dollars"]
        update.valueInDollars = 12
        _ = try await client.call(ItemServiceRPC.updateItem, update)
        var delete = DeleteItemRequest()
        delete.key = item.key
        _ = try await client.call(ItemServiceRPC.deleteItem, delete)
        let end = ContinuousClock.now + .seconds(10)
        while received.last?.0 != EventTopic.itemDeleted && ContinuousClock.now < end {
            while let frames = try subscriber.receive(dontWait: true) {
                received.append((String(decoding: frames[0], as: UTF8.self), try ItemEvent(serializedBytes: frames[1])))
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let mine = received.filter { $0.1.key == item.key }
        #expect(mine.map(\.0) == [EventTopic.itemCreated, EventTopic.itemUpdated, EventTopic.itemDeleted])
        #expect(mine.map { $0.1.item?.version } == [1, 2, 2])
        #expect(mine.count == 3 && mine[1].1.item?.valueInDollars == 12)
    }
}
