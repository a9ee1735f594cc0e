import Proto
import SQLite

/// What the store keeps beside an item's row for its claim fields: the evidence bits, the tag
/// index (`item_tags`) and the full-text index (`items_text`, whose `location` column is the
/// item's location path). Every write that changes an item calls `refreshDerived` in its own
/// transaction, so none of them is ever behind the row.
extension ItemStore {
    /// The claim fields CreateItem stores beyond the original four: only those that differ from
    /// an empty field, so a create of the original kind writes nothing more.
    func claimAssignments(_ request: CreateItemRequest) throws -> [(String, SQLiteValue)] {
        try ClaimColumns.assignments(request, names: ClaimColumns.names).filter { column, value in
            switch value {
            case .text(let text): !text.isEmpty
            case .integer(let number): column == "quantity" ? number != 1 : number != 0
            default: true
            }
        }
    }

    /// Refuses a location or category key that names nothing (NOT_FOUND); '' is none.
    func checkReferences(_ assignments: [(String, SQLiteValue)]) throws {
        for (column, value) in assignments {
            guard case .text(let key) = value, !key.isEmpty else { continue }
            switch column {
            case "location_key":
                guard try db.scalar("SELECT 1 FROM locations WHERE key = ?", [.text(key)]) != nil else {
                    throw ItemStoreError.notFound("location_key: no location with key \(key); see ListLocations")
                }
            case "category_key":
                guard try db.scalar("SELECT 1 FROM categories WHERE key = ?", [.text(key)]) != nil else {
                    throw ItemStoreError.notFound("category_key: no category with key \(key); see ListCategories")
                }
            default: continue
            }
        }
    }

    /// Brings the evidence bits, the tags index and the text index in step with `item` (row
    /// `id`), as it is after a write that changed it from `before`. `text`: reindex the words;
    /// `tags`: rewrite the tag index.
    func refreshDerived(id: Int64, item: Item, before: Item, text: Bool, tags: Bool) throws {
        let evidence = ItemEvidence.of(item)
        if evidence != ItemEvidence.of(before) {
            try db.execute("UPDATE items SET evidence = ? WHERE id = ?", [.integer(evidence.rawValue), .integer(id)])
        }
        if tags {
            try db.execute("DELETE FROM item_tags WHERE item_id = ?", [.integer(id)])
            for tag in item.tags {
                try db.execute("INSERT OR IGNORE INTO item_tags (tag, item_id) VALUES (?, ?)", [.text(tag), .integer(id)])
            }
        }
        if text { try reindexText(id: id, item: item, locationPath: try locationPath(item.locationKey)) }
    }

    /// Replaces the item's row in the text index.
    func reindexText(id: Int64, item: Item, locationPath: String) throws {
        try db.execute("DELETE FROM items_text WHERE rowid = ?", [.integer(id)])
        try db.execute(
            "INSERT INTO items_text (rowid, name, brand, model, serial_number, notes, tags, location) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .integer(id), .text(item.name), .text(item.brand), .text(item.model), .text(item.serialNumber), .text(item.notes),
                .text(item.tags.joined(separator: " ")), .text(locationPath),
            ])
    }

    /// The row id of the item with `key`.
    func rowID(key: String) throws -> Int64 {
        guard let id = try db.scalar("SELECT id FROM items WHERE key = ?", [.text(key)])?.int64Value else {
            throw ItemStoreError.notFound("no item with key \(key)")
        }
        return id
    }

    /// Whether a change of these fields changes the words the text index holds.
    static func changesText(_ fields: some Sequence<String>) -> Bool {
        fields.contains { ["name", "serial_number", "brand", "model", "notes", "tags", "location_key"].contains($0) }
    }
}
