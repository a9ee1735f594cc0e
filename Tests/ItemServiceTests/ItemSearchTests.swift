import Foundation
import Proto
import SQLite
import Testing

@testable import ItemService

/// ListItems `query`: substring of name or serial, any case, kept current through edits and
/// deletes, and built for rows that predate the search index (schema migration).
@Suite struct ItemSearchTests {
    func search(_ store: ItemStore, _ query: String) throws -> (names: [String], total: Int64) {
        var request = ListItemsRequest()
        request.query = query
        request.pageSize = 2
        var names: [String] = []
        var total: Int64 = 0
        repeat {
            let page = try store.list(request)
            names += page.items.map(\.name)
            total = page.totalCount
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return (names, total)
    }

    @Test func queriesMatchSubstringsOfNameOrSerialInAnyCase() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        for (name, serial) in [("Rusty Spork", "4X7B"), ("Shiny Mac", "1A2B"), ("Fluffy Bear", "9Z9Z"), ("Spork \"Deluxe\"", "7Q7Q"),
                               ("Crème brûlée torch", "0C0C"), ("50% off", "5O5O")] {
            _ = try store.create(createRequest(name, serial: serial), now: 1)
        }
        #expect(try search(store, "spork") == (["Rusty Spork", "Spork \"Deluxe\""], 2))
        #expect(try search(store, "x7b") == (["Rusty Spork"], 1))
        #expect(try search(store, "\"Deluxe\"") == (["Spork \"Deluxe\""], 1))
        #expect(try search(store, "brûlée") == (["Crème brûlée torch"], 1))
        #expect(try search(store, "% o") == (["50% off"], 1))
        #expect(try search(store, "ac") == (["Shiny Mac"], 1))  // under 3 characters: a scan
        #expect(try search(store, "%") == (["50% off"], 1))
        #expect(try search(store, "zzz").total == 0)
    }

    @Test func aQueryMatchingMostItemsPagesThroughEveryMatchOnce() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        // 100 of 105 match: dense enough that pages come from scanning the order, not the index.
        for index in 0..<105 { _ = try store.create(createRequest(index % 21 == 0 ? "Mac \(index)" : "Spork \(index)"), now: 1) }
        let found = try search(store, "SPORK")
        #expect(found.total == 100 && found.names.count == 100 && Set(found.names).count == 100)
        #expect(found.names.allSatisfy { $0.hasPrefix("Spork") })
    }

    @Test func searchFollowsRenamesAndDeletes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let item = try store.create(createRequest("Rusty Spork", serial: "4X7B"), now: 1).item
        var update = UpdateItemRequest()
        update.key = item.key
        update.updateMask = ["name", "serial_number"]
        update.name = "Shiny Mac"
        update.serialNumber = "1A2B"
        _ = try store.update(update, now: 2)
        #expect(try search(store, "spork").total == 0 && search(store, "4x7").total == 0)
        #expect(try search(store, "shiny") == (["Shiny Mac"], 1) && search(store, "1a2").total == 1)
        _ = try store.delete(key: item.key, now: 3)
        #expect(try search(store, "shiny").total == 0)
    }

    @Test func rowsFromBeforeTheSearchIndexAreFoundAfterMigration() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        do {
            // A database as schema version 1 left it.
            let db = try Database(path: path)
            _ = try Migrator(Array(ItemStore.migrator.migrations.prefix(1))).migrate(db)
            try db.execute("""
                INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position)
                VALUES ('\(UUID().uuidString.lowercased())', 'Old Spork', '1A1A', 5, 1, 1, 1, 1048576)
                """)
            #expect(try db.userVersion == 1)
            try db.close()
        }
        let store = try ItemStore(path: path)
        #expect(try store.db.userVersion == ItemStore.schemaVersion)
        #expect(try search(store, "spork") == (["Old Spork"], 1))
    }
}
