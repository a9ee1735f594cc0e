import Foundation
import ItemService
import Proto
import RPC
import Runtime
import SQLite
import Locking
import ZMQ

/// `homepwner-bench items`: the item service (RPC → store thread → SQLite) next to the same
/// SQL statements on a bare SQLite connection with the same pragmas, in the same run.
///
/// Creates are durable on both sides (WAL, synchronous=FULL, one commit per item). Get and
/// list run at `--items` items (default 100,000). Each figure is the median of interleaved rounds.
enum ItemsBenchmark {
    struct Result {
        let name: String
        let operations: Int
        let seconds: Double
        /// Microseconds, sorted.
        let latencies: [Double]

        var perSecond: Double { Double(operations) / seconds }
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
    }

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: Double) -> Double {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Double(arguments[index + 1])
            else { return fallback }
            return value
        }
        let seconds = option("--seconds", 5)
        let itemCount = Int(option("--items", 100_000))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-bench-items-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let bench = try Bench(folder: folder)
            defer { bench.stop() }
            let rounds = Int(option("--rounds", 5))
            let slice = seconds / Double(rounds)

            var results: [[Result]] = Array(repeating: [], count: 8)
            print("creates (durable), \(rounds) interleaved rounds…")
            for _ in 0..<rounds {
                results[0].append(try bench.bareCreates(seconds: slice))
                results[1].append(try await bench.serviceCreates(seconds: slice, inFlight: 1))
                results[2].append(try await bench.serviceCreates(seconds: slice, inFlight: 16))
                results[7].append(try await bench.storeCreates(seconds: slice))
            }
            print("filling both databases to \(itemCount) items…")
            try await bench.fill(to: itemCount)
            print("get and list at \(itemCount) items…")
            for _ in 0..<rounds {
                results[3].append(try bench.bareGets(seconds: slice))
                results[4].append(try await bench.serviceGets(seconds: slice))
                results[5].append(try bench.bareLists(seconds: slice))
                results[6].append(try await bench.serviceLists(seconds: slice))
            }
            let moves = try await bench.serviceMoves(seconds: seconds / 2)
            let queried = try await bench.serviceQueries(seconds: seconds / 2, query: "spork")
            let rare = try await bench.serviceQueries(seconds: seconds / 2, query: "4x7b")
            // Full-text search (ListItems.search, ranked): words as people type them, from one
            // that matches a third of the items to one that matches a few.
            print("search at \(itemCount) items…")
            var searches: [(String, Result, String)] = []
            for words in ["fluffy", "sp", "bosch fridge", "bosch kgn3", "4x7"] {
                var bareRounds: [Result] = [], serviceRounds: [Result] = []
                for _ in 0..<rounds {
                    bareRounds.append(try bench.bareSearches(seconds: slice / 2, words: words))
                    serviceRounds.append(try await bench.serviceSearches(seconds: slice / 2, words: words))
                }
                let ratios = zip(serviceRounds, bareRounds).map { $0.perSecond / $1.perSecond }.sorted()
                searches.append(("search \"\(words)\" at \(itemCount)", median(bareRounds), "1.00"))
                searches.append((
                    "search \"\(words)\" at \(itemCount)", median(serviceRounds),
                    String(format: "%.2f (%.2f–%.2f)", ratios[ratios.count / 2], ratios.first!, ratios.last!)
                ))
            }
            // Valuation and readiness read every item, on a read-only connection of their own:
            // how long that is, and GetItem while they run (against GetItem alone above).
            print("valuation and readiness at \(itemCount) items…")
            let valuations = try await bench.serviceReads(seconds: seconds / 2, "item service GetValuation, 1 in flight") { client in
                _ = try await client.call(ItemServiceRPC.getValuation, GetValuationRequest())
            }
            let readiness = try await bench.serviceReads(seconds: seconds / 2, "item service GetReadiness, 1 in flight") { client in
                _ = try await client.call(ItemServiceRPC.getReadiness, GetReadinessRequest())
            }
            let getsDuringValuations = try await bench.serviceGetsDuringValuations(seconds: seconds / 2)
            let medians = results.map(median)
            print("""

                | operation | what | ops/s | p50 µs | p99 µs | ratio to bare (median, min–max of rounds) |
                |---|---|---|---|---|---|
                """)
            // Ratios pair each round with its own baseline (the disk is shared: a round's
            // neighbour can slow both), then take the median: a range, not one lucky round.
            func ratio(_ variant: Int, _ baseline: Int) -> String {
                let ratios = zip(results[variant], results[baseline]).map { $0.perSecond / $1.perSecond }.sorted()
                return String(format: "%.2f (%.2f–%.2f)", ratios[ratios.count / 2], ratios.first!, ratios.last!)
            }
            let rows: [(String, Result, String)] = [
                ("create (durable)", medians[0], "1.00"), ("create (durable)", medians[1], ratio(1, 0)),
                ("create (durable)", medians[2], ratio(2, 0)), ("create (durable)", medians[7], ratio(7, 0)),
                ("get at \(itemCount)", medians[3], "1.00"), ("get at \(itemCount)", medians[4], ratio(4, 3)),
                ("list page 50 at \(itemCount)", medians[5], "1.00"), ("list page 50 at \(itemCount)", medians[6], ratio(6, 5)),
                ("move at \(itemCount)", moves, "–"),
                ("list page 50 at \(itemCount), query", queried, "–"),
                ("list page 50 at \(itemCount), query", rare, "–"),
            ] + searches + [
                ("valuation at \(itemCount)", valuations, "–"), ("readiness at \(itemCount)", readiness, "–"),
                ("get at \(itemCount) while valuations run", getsDuringValuations, String(format: "%.2f of get alone", getsDuringValuations.perSecond / medians[4].perSecond)),
            ]
            for (operation, result, ratio) in rows {
                print(String(
                    format: "| %@ | %@ | %.0f | %.1f | %.1f | %@ |", operation, result.name, result.perSecond,
                    result.percentile(0.5), result.percentile(0.99), ratio))
            }
        } catch {
            FileHandle.standardError.write(Data("items benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func median(_ rounds: [Result]) -> Result {
        let sorted = rounds.sorted { $0.perSecond < $1.perSecond }
        return sorted[sorted.count / 2]
    }

    /// The two sides: an item-service host with a client, and a bare connection on its own file.
    final class Bench {
        let folder: String
        let context: Context
        let logger = Logger(label: "bench", level: .error)
        var host: ServiceComposition
        let client: RPCClient
        let bare: Database
        let bareInsert: Statement
        var keys: [String] = []
        var bareKeys: [String] = []

        init(folder: String) throws {
            self.folder = folder
            context = try Context(ioThreads: 1)
            host = try Self.startHost(folder: folder, context: context, logger: logger)
            client = try RPCClient(context: context, endpoint: "ipc://\(folder)/item.sock")
            // The same schema and pragmas as the store: ItemStore creates the file, then it is used bare.
            try ItemStore(path: folder + "/bare.db").close()
            bare = try Database(path: folder + "/bare.db")
            try bare.execute("PRAGMA journal_mode=WAL")
            try bare.execute("PRAGMA synchronous=FULL")
            bareInsert = try bare.prepare("""
                INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position)
                VALUES (?, ?, ?, ?, ?, ?, 1, ?)
                """)
        }

        static func startHost(folder: String, context: Context, logger: Logger) throws -> ServiceComposition {
            let host = try ItemServiceHost.make(
                ItemServiceConfiguration(
                    rpcEndpoint: "ipc://\(folder)/item.sock", eventsEndpoint: "ipc://\(folder)/events.sock",
                    dataDirectory: folder + "/data", imageServiceEndpoint: "ipc://\(folder)/image.sock"),
                context: context, logger: logger)
            try host.start()
            return host
        }

        func stop() {
            client.close()
            host.stop()
        }

        var bareCount = 0

        func insertBare(_ random: (name: String, serialNumber: String, valueInDollars: Int64)) throws {
            let key = UUID().uuidString.lowercased()
            let now = SystemClock().nowMilliseconds()
            bareCount += 1
            try bareInsert.bind([
                .text(key), .text(random.name), .text(random.serialNumber), .integer(random.valueInDollars), .integer(now),
                .integer(now), .integer(Int64(bareCount) << 20),
            ])
            while try bareInsert.step() {}
            bareKeys.append(key)
        }

        func bareCreates(seconds: Double) throws -> Result {
            try measure("bare SQLite INSERT, 1 commit each", seconds: seconds) { try insertBare(RandomItem.make()) }
        }

        func serviceCreates(seconds: Double, inFlight: Int) async throws -> Result {
            var random = CreateItemRequest()
            random.random = true
            let request = random, client = client
            return try await measureConcurrently("item service CreateItem, \(inFlight) in flight", seconds: seconds, inFlight: inFlight) {
                _ = try await client.call(ItemServiceRPC.createItem, request)
            }
        }

        /// The store without RPC: the same create through the store's thread, from a task.
        func storeCreates(seconds: Double) async throws -> Result {
            let queue = ItemStoreQueue(path: folder + "/store-only.db")
            try queue.start()
            defer { queue.close() }
            var random = CreateItemRequest()
            random.random = true
            let request = random
            return try await measureConcurrently("store thread only (no RPC), 1 in flight", seconds: seconds, inFlight: 1) {
                _ = try await queue.perform { try $0.create(request, now: 1) }
            }
        }

        /// Brings both databases to `count` items with bulk transactions (setup, not measured).
        func fill(to count: Int) async throws {
            host.stop()
            let service = try Database(path: folder + "/data/items/items.db")
            for db in [service, bare] {
                let existing = Int(try db.scalar("SELECT count(*) FROM items")?.int64Value ?? 0)
                let maxPosition = try db.scalar("SELECT max(position) FROM items")?.int64Value ?? 0
                let insert = try db.prepare("""
                    INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position, brand, model, notes)
                    VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
                    """)
                // The words search reads, as the store writes them (ItemStore.reindexText).
                let index = try db.prepare("""
                    INSERT INTO items_text (rowid, name, brand, model, serial_number, notes, tags, location) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """)
                try db.inTransaction {
                    for number in 0..<max(0, count - existing) {
                        let random = RandomItem.make()
                        let now = SystemClock().nowMilliseconds()
                        let brand = Self.brands[number % Self.brands.count]
                        let model = brand.prefix(3).uppercased() + String(Int.random(in: 100...999))
                        let notes = number % 10 == 0 ? "bought for the \(Self.rooms[number % Self.rooms.count]); \(Self.notes.randomElement()!)" : ""
                        try insert.bind([
                            .text(UUID().uuidString.lowercased()), .text(random.name), .text(random.serialNumber),
                            .integer(random.valueInDollars), .integer(now), .integer(now), .integer(maxPosition + Int64(number + 1) << 20),
                            .text(brand), .text(model), .text(notes),
                        ])
                        while try insert.step() {}
                        try index.bind([
                            .integer(db.lastInsertRowID), .text(random.name), .text(brand), .text(model), .text(random.serialNumber), .text(notes),
                            .text(""), .text("Home / " + Self.rooms[number % Self.rooms.count]),
                        ])
                        while try index.step() {}
                    }
                }
            }
            keys = try service.query("SELECT key FROM items ORDER BY random() LIMIT 10000").compactMap { $0[0].stringValue }
            bareKeys = try bare.query("SELECT key FROM items ORDER BY random() LIMIT 10000").compactMap { $0[0].stringValue }
            try service.close()
            host = try Self.startHost(folder: folder, context: context, logger: logger)
        }

        static let brands = [
            "Bosch", "Sony", "Samsung", "LG", "Philips", "Miele", "Apple", "Dell", "Canon", "Nikon", "IKEA", "Dyson", "Braun",
            "Siemens", "Panasonic", "Lenovo", "HP", "Makita", "DeWalt", "Le Creuset",
        ]
        static let rooms = ["Kitchen", "Living room", "Bedroom", "Study", "Garage", "Bathroom", "Attic", "Cellar"]
        static let notes = ["fridge by the window", "gift from grandmother", "receipt in the drawer", "wall mounted", "spare in the box"]

        /// The bare side of a search, in the shape the store chooses: count the matches, then
        /// (at most 2,000 matches) 51 (rank, rowid) pairs ranked by the text index and their
        /// 50 rows by id, or (more) 51 rows newest first, the index driving.
        func bareSearches(seconds: Double, words: String) throws -> Result {
            let match = words.split(separator: " ").map { "\"\($0)\"*" }.joined(separator: " ")
            let count = try bare.prepare("SELECT count(*) FROM items_text WHERE items_text MATCH ?")
            let ranked = try bare.prepare("SELECT rowid, rank FROM items_text WHERE items_text MATCH ? ORDER BY rank, rowid LIMIT 51")
            let newest = try bare.prepare("""
                SELECT \(Self.columns.split(separator: ",").map { "items." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", "))
                FROM items_text JOIN items ON items.id = items_text.rowid WHERE items_text MATCH ? ORDER BY items_text.rowid DESC LIMIT 51
                """)
            return try measure("bare SQLite FTS5: count, then 51 rows", seconds: seconds) {
                try count.bind([.text(match)])
                let matches = try count.rows().first?[0].int64Value ?? 0
                if matches <= ItemStore.maxRankedMatches {
                    try ranked.bind([.text(match)])
                    let ids = try ranked.rows().prefix(50).map { SQLiteValue.integer($0[0].int64Value ?? 0) }
                    guard !ids.isEmpty else { return }
                    _ = try bare.query(
                        "SELECT \(Self.columns) FROM items WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ", ")))", ids)
                } else {
                    try newest.bind([.text(match)])
                    _ = try newest.rows()
                }
            }
        }

        /// One read the whole inventory answers, 1 in flight.
        func serviceReads(seconds: Double, _ name: String, _ call: @escaping @Sendable (RPCClient) async throws -> Void) async throws -> Result {
            let client = client
            return try await measureConcurrently(name, seconds: seconds, inFlight: 1) { try await call(client) }
        }

        /// ListItems with `search`, first pages (ranked), 1 in flight.
        func serviceSearches(seconds: Double, words: String) async throws -> Result {
            let client = client
            return try await measureConcurrently("item service ListItems page 50, search", seconds: seconds, inFlight: 1) {
                var request = ListItemsRequest()
                request.pageSize = 50
                request.search = words
                _ = try await client.call(ItemServiceRPC.listItems, request)
            }
        }

        func bareGets(seconds: Double) throws -> Result {
            let select = try bare.prepare("SELECT \(Self.columns) FROM items WHERE key = ?")
            return try measure("bare SQLite SELECT by key", seconds: seconds) {
                try select.bind([.text(bareKeys.randomElement()!)])
                _ = try select.rows()
            }
        }

        func serviceGets(seconds: Double) async throws -> Result {
            let client = client, keys = keys
            return try await measureConcurrently("item service GetItem, 1 in flight", seconds: seconds, inFlight: 1) {
                var request = GetItemRequest()
                request.key = keys.randomElement()!
                _ = try await client.call(ItemServiceRPC.getItem, request)
            }
        }

        /// GetItem, 1 in flight, while another client runs GetValuation back to back (a pass over
        /// every item each): with its own connection, a valuation holds up no GetItem.
        func serviceGetsDuringValuations(seconds: Double) async throws -> Result {
            let keys = keys
            let valuer = try RPCClient(context: context, endpoint: "ipc://\(folder)/item.sock")
            defer { valuer.close() }
            let valuations = Task {
                while !Task.isCancelled {
                    _ = try? await valuer.call(ItemServiceRPC.getValuation, GetValuationRequest())
                }
            }
            defer { valuations.cancel() }
            let client = client
            return try await measureConcurrently("item service GetItem, 1 in flight, GetValuation running", seconds: seconds, inFlight: 1) {
                var request = GetItemRequest()
                request.key = keys.randomElement()!
                _ = try await client.call(ItemServiceRPC.getItem, request)
            }
        }

        static let columns =
            "id, key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, photo_keys, primary_photo_key, position"

        func bareLists(seconds: Double) throws -> Result {
            let first = try bare.prepare("SELECT \(Self.columns) FROM items ORDER BY position, id LIMIT 51")
            let next = try bare.prepare("SELECT \(Self.columns) FROM items WHERE (position, id) > (?, ?) ORDER BY position, id LIMIT 51")
            var last: (Int64, Int64)?
            return try measure("bare SQLite keyset SELECT, 51 rows", seconds: seconds) {
                let rows: [Row]
                if let (position, id) = last {
                    try next.bind([.integer(position), .integer(id)])
                    rows = try next.rows()
                } else {
                    try first.bind([])
                    rows = try first.rows()
                }
                last = rows.count == 51 ? (rows[49][10].int64Value!, rows[49][0].int64Value!) : nil
            }
        }

        func serviceLists(seconds: Double) async throws -> Result {
            let client = client
            let token = Locked("")
            return try await measureConcurrently("item service ListItems page 50, 1 in flight", seconds: seconds, inFlight: 1) {
                var request = ListItemsRequest()
                request.pageSize = 50
                request.pageToken = token.withLock { $0 }
                let page = try await client.call(ItemServiceRPC.listItems, request)
                token.withLock { $0 = page.nextPageToken }
            }
        }

        /// ListItems with a query, first pages only: "spork" matches a third of the random
        /// names, "4x7b" one serial in 67,600.
        func serviceQueries(seconds: Double, query: String) async throws -> Result {
            let client = client
            return try await measureConcurrently("item service ListItems page 50, query \"\(query)\"", seconds: seconds, inFlight: 1) {
                var request = ListItemsRequest()
                request.pageSize = 50
                request.query = query
                _ = try await client.call(ItemServiceRPC.listItems, request)
            }
        }

        func serviceMoves(seconds: Double) async throws -> Result {
            let client = client
            let count = Int32(try await client.call(ItemServiceRPC.stats, ItemStatsRequest()).itemCount)
            return try await measureConcurrently("item service MoveItem, 1 in flight", seconds: seconds, inFlight: 1) {
                var request = MoveItemRequest()
                request.fromIndex = Int32.random(in: 0..<count)
                request.toIndex = Int32.random(in: 0..<count)
                _ = try await client.call(ItemServiceRPC.moveItem, request)
            }
        }
    }

    static func measure(_ name: String, seconds: Double, _ body: () throws -> Void) throws -> Result {
        var latencies: [Double] = []
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        var now = start
        while now < end {
            try body()
            let after = DispatchTime.now().uptimeNanoseconds
            latencies.append(Double(after - now) / 1000)
            now = after
        }
        return Result(name: name, operations: latencies.count, seconds: Double(now - start) / 1e9, latencies: latencies.sorted())
    }

    static func measureConcurrently(
        _ name: String, seconds: Double, inFlight: Int, _ body: @escaping @Sendable () async throws -> Void
    ) async throws -> Result {
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    var mine: [Double] = []
                    var now = DispatchTime.now().uptimeNanoseconds
                    while now < end {
                        try await body()
                        let after = DispatchTime.now().uptimeNanoseconds
                        mine.append(Double(after - now) / 1000)
                        now = after
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Result(name: name, operations: latencies.count, seconds: elapsed, latencies: latencies.sorted())
    }
}
