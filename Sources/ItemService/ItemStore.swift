import Foundation
import JobQueue
import Proto
import SQLite

/// Where items are stored: one SQLite connection on `items.db`, owned by one serial owner
/// (`ItemStoreQueue`). Every method is synchronous and runs its writes in one transaction.
///
/// Durability: WAL with `synchronous=FULL`, so a commit is on disk before a method returns,
/// and an acknowledged write survives SIGKILL and power loss.
///
/// The `cascade` job queue lives in the same file (`jobs`): a delete's cascade commits with it.
public final class ItemStore {
    /// The schema version this build writes: the migrator's, version 5 (the outbox moved), then
    /// `laterMigrator`'s.
    public static var schemaVersion: Int { laterMigrator.migrations.last!.version }
    static let outboxMovedVersion = 5

    /// The columns every item query selects, in `item(from:)` order.
    static let columns =
        "id, key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, photo_keys, primary_photo_key, position, "
        + ClaimColumns.selected

    let db: Database
    /// The `cascade` and `capture` queues' jobs, on this connection (`CascadeQueue`, `CaptureQueue`).
    public let jobs: JobStore
    /// The manual order, mirrored in memory so MoveItem finds an index in O(1).
    var order: ManualOrder
    /// Its writes, alone or in a group commit's batch; a write undone reloads `order`.
    private let transactions: WriteTransactions
    private let selectByKey: Statement
    private let insert: Statement
    private let selectDeleted: Statement
    /// Who the changes being made are recorded as made by (`acting(as:)`; the history).
    var actor = HistoryChain.localActor
    /// While an import commits (`commitImport`): the exporting installation's history head,
    /// which turns each `….created` entry into `….imported` carrying it.
    var importing: HistoryHead?

    /// Opens (creating or migrating) the database at `path`.
    ///
    /// - Parameters:
    ///   - seedPath: A database copied to `path` when `path` does not exist yet.
    ///   - fileSync: Makes a file or folder durable (fsync); tests count its calls.
    ///   - cascade: The cascade queue (its retry policy); the `JobQueueService` serving it gets the same.
    ///   - capture: The capture queue, likewise.
    public init(
        path: String, seedPath: String? = nil, fileSync: FileSync = .system,
        cascade: JobQueueConfiguration = CascadeQueue.configuration(), capture: JobQueueConfiguration = CaptureQueue.configuration()
    ) throws {
        if let seedPath, !FileManager.default.fileExists(atPath: path) {
            try Self.copySeed(seedPath, to: path, fileSync: fileSync)
        }
        db = try Database(path: path)
        try db.setBusyTimeout(milliseconds: 5000)
        try db.execute("PRAGMA journal_mode=WAL")
        // FULL: in WAL mode, NORMAL may lose the last commits on power loss.
        try db.execute("PRAGMA synchronous=FULL")
        try db.execute("PRAGMA foreign_keys=ON")
        let version = try db.userVersion
        guard version <= Self.schemaVersion else {
            throw ItemStoreError.failedPrecondition(
                "\(path) has schema version \(version), newer than this build's \(Self.schemaVersion)")
        }
        _ = try Self.migrator.migrate(db)
        try JobStore.migrate(db)
        jobs = try JobStore(db: db, queues: [cascade, capture])
        try Self.moveOutboxIntoJobs(db, jobs)
        _ = try Self.laterMigrator.migrate(db)
        selectByKey = try db.prepare("SELECT \(Self.columns) FROM items WHERE key = ?")
        insert = try db.prepare("""
            INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position, evidence)
            VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)
            """)
        selectDeleted = try db.prepare("SELECT deleted_at_ms FROM deleted_items WHERE key = ?")
        order = ManualOrder()
        transactions = WriteTransactions(db)
        try reloadOrder()
        transactions.undone = { [unowned self] in try? self.reloadOrder() }
        try recordUpgradeIfPending(now: Self.wallClockMilliseconds())
    }

    /// Closes the connection.
    public func close() throws {
        try db.close()
    }

    /// Reads the manual order from the table (at open, and after a failed commit).
    func reloadOrder() throws {
        let rows = try db.query("SELECT id, position FROM items ORDER BY position, id")
        order = ManualOrder(entries: rows.map { ManualOrder.Entry(id: $0[0].int64Value!, position: $0[1].int64Value!) })
    }

    /// Runs `body` in a write transaction (a savepoint inside a batch); on failure the
    /// in-memory order is read back from the database.
    public func write<T>(_ body: () throws -> T) throws -> T { try transactions.write(body) }

    /// True between `beginBatch()` and `commitBatch()`, while the batch's transaction is open.
    var inBatch: Bool { transactions.inBatch }

    /// Whether the batch's transaction is still open after a job (`WriteTransactions`).
    public func batchIsOpen() -> Bool { transactions.batchIsOpen() }

    /// Group commit: the jobs between `beginBatch()` and `commitBatch()` share one transaction
    /// (one fsync), each in its own savepoint. Their callers hear back only after the commit.
    public func beginBatch() throws { try transactions.beginBatch() }

    /// Commits without waiting for the disk when not `durable` (`WriteTransactions.commitDurably`).
    public func commitDurably(_ durable: Bool) throws { try transactions.commitDurably(durable) }
    /// The log a `LogSyncer` syncs (`WriteTransactions.writeAheadLog`).
    public var writeAheadLog: String? { transactions.writeAheadLog }
    /// Rows changed since the store opened (`WriteTransactions.totalChanges`).
    public var totalChanges: Int { transactions.totalChanges }

    /// Commits the batch; on failure nothing of it is kept and the order is read back.
    public func commitBatch() throws { try transactions.commitBatch() }

    // MARK: Items

    /// Creates an item, or returns the one created before with the same client-chosen key.
    ///
    /// - Parameter record: Whether to record `item.created`; an import records the item once its
    ///   photos are in (`commitImport`).
    /// - Returns: The item and whether this call created it.
    public func create(_ request: CreateItemRequest, now: Int64, record: Bool = true) throws -> (item: Item, created: Bool) {
        var name = request.name, serial = request.serialNumber, value = request.valueInDollars
        if request.random {
            if !name.isEmpty || !serial.isEmpty || value != 0 {
                throw ItemStoreError.invalidArgument(
                    "random fills name, serial_number and value_in_dollars itself; leave them unset "
                        + "(got name \(ItemInput.quoted(name)), serial_number \(ItemInput.quoted(serial)), value_in_dollars \(value))")
            }
            let random = RandomItem.make()
            (name, serial, value) = (random.name, random.serialNumber, random.valueInDollars)
        }
        name = try ItemInput.name(name)
        serial = try ItemInput.serial(serial)
        value = try ItemInput.value(value)
        let key = request.key.isEmpty ? UUID().uuidString.lowercased() : try ItemInput.key(request.key, field: "key")
        let claim = try claimAssignments(request)
        return try write {
            // A key made here is new; only a client's key can name an item that exists or existed.
            if !request.key.isEmpty {
                if let existing = try find(key: key) { return (existing, false) }
                try selectDeleted.bind([.text(key)])
                if let deletedAt = try selectDeleted.rows().first?[0].int64Value {
                    throw ItemStoreError.failedPrecondition(
                        "key \(key) belonged to an item deleted at \(deletedAt) ms; create with a new key")
                }
            }
            try checkReferences(claim)
            let position = order.nextPosition()
            var item = Item()
            item.key = key
            item.name = name
            item.serialNumber = serial
            item.valueInDollars = value
            item.createdAtMs = now
            item.updatedAtMs = now
            item.version = 1
            item.quantity = 1
            try insert.bind([
                .text(key), .text(name), .text(serial), .integer(value), .integer(now), .integer(now), .integer(position),
                .integer(ItemEvidence.of(item).rawValue),
            ])
            while try insert.step() {}
            let id = db.lastInsertRowID
            order.append(id: id, position: position)
            if claim.isEmpty {
                try reindexText(id: id, item: item, locationPath: "")
            } else {
                try db.execute(
                    "UPDATE items SET \(claim.map { "\($0.0) = ?" }.joined(separator: ", ")) WHERE id = ?",
                    claim.map(\.1) + [.integer(id)])
                let inserted = item
                item = try existing(key: key)
                try refreshDerived(id: id, item: item, before: inserted, text: true, tags: !item.tags.isEmpty)
            }
            // With claim fields, `item` is the row read back; else it is built here, so read.
            if record { try recordItem("item.created", key: key, now: now, as: claim.isEmpty ? nil : item) }
            return (item, true)
        }
    }

    /// The item with `key`.
    public func get(key: String) throws -> Item {
        let key = try ItemInput.key(key, field: "key")
        guard let item = try find(key: key) else { throw ItemStoreError.notFound("no item with key \(key)") }
        return item
    }

    /// Changes the fields named in `update_mask`; checks `expected_version` when non-zero.
    public func update(_ request: UpdateItemRequest, now: Int64) throws -> Item {
        let key = try ItemInput.key(request.key, field: "key")
        guard !request.updateMask.isEmpty else {
            throw ItemStoreError.invalidArgument(
                "update_mask must name at least one of name, serial_number, value_in_dollars or a claim field (got none)")
        }
        var fields: [String: SQLiteValue] = [:]
        var claimNames: [String] = []
        for field in request.updateMask {
            if let name = ClaimColumns.name(field) {
                claimNames.append(name)
                continue
            }
            switch field {
            case "name": fields["name"] = .text(try ItemInput.name(request.name))
            case "serial_number", "serialNumber": fields["serial_number"] = .text(try ItemInput.serial(request.serialNumber))
            case "value_in_dollars", "valueInDollars":
                fields["value_in_dollars"] = .integer(try ItemInput.value(request.valueInDollars))
            default:
                throw ItemStoreError.invalidArgument(
                    "update_mask names an unknown field \(ItemInput.quoted(field)); use name, serial_number, value_in_dollars or one of "
                        + ClaimColumns.names.joined(separator: ", "))
            }
        }
        let claim = try ClaimColumns.assignments(request, names: claimNames)
        for (column, value) in claim { fields[column] = value }
        guard request.expectedVersion >= 0 else {
            throw ItemStoreError.invalidArgument("expected_version must be ≥ 0 (got \(request.expectedVersion))")
        }
        return try write {
            let item = try existing(key: key)
            try checkVersion(item, expected: request.expectedVersion)
            try checkReferences(claim)
            let id = try rowID(key: key)
            let names = fields.keys.sorted()
            let assignments = names.map { "\($0) = ?" }.joined(separator: ", ")
            try db.execute(
                "UPDATE items SET \(assignments), updated_at_ms = ?, version = version + 1 WHERE id = ?",
                names.map { fields[$0]! } + [.integer(now), .integer(id)])
            let updated = try existing(key: key)
            let changed = Set(request.updateMask.map { ClaimColumns.name($0) ?? ($0 == "serialNumber" ? "serial_number" : $0) })
            try refreshDerived(id: id, item: updated, before: item, text: Self.changesText(changed), tags: changed.contains("tags"))
            try recordItem("item.updated", key: key, now: now, as: updated)
            return updated
        }
    }

    /// Deletes an item and enqueues its image cascade in the same transaction: a `cascade` job
    /// for the images it owns, and the photos attached to it and to no other item, whoever owns
    /// them.
    ///
    /// - Returns: The item as it was.
    public func delete(key: String, now: Int64) throws -> Item {
        let key = try ItemInput.key(key, field: "key")
        return try write {
            let item = try existing(key: key)
            guard let id = try db.scalar("SELECT id FROM items WHERE key = ?", [.text(key)])?.int64Value else {
                throw ItemStoreError.notFound("no item with key \(key)")
            }
            var attachedOnlyHere: [String] = []
            for photo in item.photoKeys {
                let elsewhere = try db.scalar(
                    "SELECT 1 FROM item_photos WHERE image_key = ? AND item_id != ? LIMIT 1", [.text(photo), .integer(id)])
                guard elsewhere == nil else { continue }
                attachedOnlyHere.append(photo)
                // From now on no item may take it: the cascade is about to delete it.
                try db.execute(
                    "INSERT OR IGNORE INTO cascaded_photos (image_key, item_key, deleted_at_ms) VALUES (?, ?, ?)",
                    [.text(photo), .text(key), .integer(now)])
            }
            try recordItem("item.deleted", key: key, now: now, as: item)
            try db.execute("DELETE FROM items WHERE id = ?", [.integer(id)])
            try db.execute("INSERT OR REPLACE INTO deleted_items (key, deleted_at_ms) VALUES (?, ?)", [.text(key), .integer(now)])
            _ = try jobs.enqueue(
                queue: CascadeQueue.name, payload: CascadeQueue.payload(owner: key, attached: attachedOnlyHere),
                dedupeKey: CascadeQueue.dedupeKey(key), now: now)
            order.remove(id: id)
            return item
        }
    }

    /// Moves the item at `from` to `to` in the manual order (the seed's semantics).
    public func move(from: Int32, to: Int32, now: Int64 = ItemStore.wallClockMilliseconds()) throws {
        guard from >= 0 else { throw ItemStoreError.invalidArgument("from_index must be ≥ 0 (got \(from))") }
        guard to >= 0 else { throw ItemStoreError.invalidArgument("to_index must be ≥ 0 (got \(to))") }
        let count = order.count
        guard count > 0 else {
            throw ItemStoreError.outOfRange("there are no items to move (from_index \(from), to_index \(to))")
        }
        guard Int(from) < count else {
            throw ItemStoreError.outOfRange("from_index \(from) is past the last item (there are \(count) items, indexes 0…\(count - 1))")
        }
        guard Int(to) < count else {
            throw ItemStoreError.outOfRange("to_index \(to) is past the last item (there are \(count) items, indexes 0…\(count - 1))")
        }
        var next = order
        let changes = next.move(from: Int(from), to: Int(to))
        guard !changes.isEmpty else { return }
        let moved = order.entries[Int(from)].id
        try write {
            let statement = try db.prepare("UPDATE items SET position = ? WHERE id = ?")
            for change in changes {
                try statement.bind([.integer(change.position), .integer(change.id)])
                while try statement.step() {}
            }
            guard let key = try db.scalar("SELECT key FROM items WHERE id = ?", [.integer(moved)])?.stringValue else {
                throw ItemStoreError.notFound("the item at from_index \(from) is gone")
            }
            try recordItem("item.moved", key: key, now: now, move: (from, to))
        }
        order = next
    }

    /// The number of items and of item deletes whose image cascade is not delivered yet.
    public func stats() throws -> ItemStatsResponse {
        var response = ItemStatsResponse()
        response.itemCount = Int64(order.count)
        var request = JobStatsRequest()
        request.queue = CascadeQueue.name
        // Owed: QUEUED (ready or scheduled: which `now` splits them does not matter) or RUNNING.
        let cascades = try jobs.stats(request, now: 0)
        response.pendingCascades = cascades.ready + cascades.scheduled + cascades.leased
        return response
    }

    // MARK: Helpers

    func find(key: String) throws -> Item? {
        try selectByKey.bind([.text(key)])
        return try selectByKey.rows().first.map(Self.item(from:))
    }

    func existing(key: String) throws -> Item {
        guard let item = try find(key: key) else { throw ItemStoreError.notFound("no item with key \(key)") }
        return item
    }

    func checkVersion(_ item: Item, expected: Int64) throws {
        if expected != 0 && expected != item.version {
            throw ItemStoreError.aborted(
                "item \(item.key) is at version \(item.version), not expected_version \(expected); read it again and retry")
        }
    }

    /// An `Item` from a row of `columns`.
    static func item(from row: Row) -> Item {
        var item = Item()
        item.key = row[1].stringValue ?? ""
        item.name = row[2].stringValue ?? ""
        item.serialNumber = row[3].stringValue ?? ""
        item.valueInDollars = row[4].int64Value ?? 0
        item.createdAtMs = row[5].int64Value ?? 0
        item.updatedAtMs = row[6].int64Value ?? 0
        item.version = row[7].int64Value ?? 0
        let photos = row[8].stringValue ?? ""
        item.photoKeys = photos.isEmpty ? [] : photos.split(separator: " ").map(String.init)
        item.primaryPhotoKey = row[9].stringValue ?? ""
        ClaimColumns.read(row, into: &item)
        return item
    }
}
