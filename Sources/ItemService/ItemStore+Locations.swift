import Foundation
import Proto
import SQLite

/// Locations: a tree of places (home → floor → room → container); an item is in at most one.
extension ItemStore {
    static let locationColumns = "key, name, parent_key, kind, notes, created_at_ms, updated_at_ms, version"

    /// Creates a location, or returns the one created before with the same client-chosen key.
    public func createLocation(_ request: CreateLocationRequest, now: Int64) throws -> Location {
        try addLocation(request, now: now).location
    }

    /// `createLocation`, telling whether this call created it (false: a repeat of a create).
    func addLocation(_ request: CreateLocationRequest, now: Int64) throws -> (location: Location, created: Bool) {
        let name = try ClaimInput.name(request.name, limit: ClaimInput.maxLocationNameLength)
        let parent = try ClaimInput.optionalKey(request.parentKey, field: "parent_key")
        let kind = try Self.kind(request.kind)
        let notes = try ClaimInput.text(request.notes, field: "notes", limit: ClaimInput.maxNotesLength, multiline: true)
        let key = request.key.isEmpty ? UUID().uuidString.lowercased() : try ItemInput.key(request.key, field: "key")
        return try write {
            if !request.key.isEmpty {
                if try db.scalar("SELECT 1 FROM locations WHERE key = ?", [.text(key)]) != nil {
                    return (try location(key: key, tree: try locationTree()), false)
                }
                if let deletedAt = try db.scalar("SELECT deleted_at_ms FROM deleted_locations WHERE key = ?", [.text(key)])?.int64Value {
                    throw ItemStoreError.failedPrecondition(
                        "key \(key) belonged to a location deleted at \(deletedAt) ms; create with a new key")
                }
            }
            let tree = try locationTree()
            try checkPlace(name: name, parent: parent, moving: nil, tree: tree)
            try db.execute(
                "INSERT INTO locations (key, name, parent_key, kind, notes, created_at_ms, updated_at_ms, version) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                [.text(key), .text(name), .text(parent), .integer(Int64(kind.rawValue)), .text(notes), .integer(now), .integer(now)])
            try recordLocation("location.created", key: key, now: now)
            return (try location(key: key, tree: try locationTree()), true)
        }
    }

    /// The location with `key`, its path and item counts filled.
    public func getLocation(key: String) throws -> Location {
        let key = try ItemInput.key(key, field: "key")
        return try location(key: key, tree: try locationTree())
    }

    /// Every location (or `root_key`'s subtree) depth first, with paths and item counts.
    public func listLocations(_ request: ListLocationsRequest) throws -> ListLocationsResponse {
        let tree = try locationTree()
        var response = ListLocationsResponse()
        let counts = try locationItemCounts()
        var locations: [Location]
        if request.rootKey.isEmpty {
            locations = tree.ordered
        } else {
            let root = try ItemInput.key(request.rootKey, field: "root_key")
            locations = tree.subtree(of: root)
            guard !locations.isEmpty else { throw ItemStoreError.notFound("root_key: no location with key \(root)") }
        }
        let totals = tree.subtreeTotals(counts)
        locations = locations.map { Self.counted($0, counts: counts, totals: totals) }
        response.locations = locations
        response.unplacedItemCount = counts[""] ?? 0
        return response
    }

    /// Renames, re-kinds, re-notes or moves a location (`parent_key` in the mask).
    public func updateLocation(_ request: UpdateLocationRequest, now: Int64) throws -> Location {
        let key = try ItemInput.key(request.key, field: "key")
        guard !request.updateMask.isEmpty else {
            throw ItemStoreError.invalidArgument("update_mask must name at least one of name, parent_key, kind, notes (got none)")
        }
        var fields: [String: SQLiteValue] = [:]
        for entry in request.updateMask {
            switch entry {
            case "name": fields["name"] = .text(try ClaimInput.name(request.name, limit: ClaimInput.maxLocationNameLength))
            case "parent_key", "parentKey": fields["parent_key"] = .text(try ClaimInput.optionalKey(request.parentKey, field: "parent_key"))
            case "kind": fields["kind"] = .integer(Int64(try Self.kind(request.kind).rawValue))
            case "notes":
                fields["notes"] = .text(try ClaimInput.text(request.notes, field: "notes", limit: ClaimInput.maxNotesLength, multiline: true))
            default:
                throw ItemStoreError.invalidArgument(
                    "update_mask names an unknown field \(ItemInput.quoted(entry)); use name, parent_key, kind or notes")
            }
        }
        guard request.expectedVersion >= 0 else {
            throw ItemStoreError.invalidArgument("expected_version must be ≥ 0 (got \(request.expectedVersion))")
        }
        return try write {
            let tree = try locationTree()
            guard let before = tree.byKey[key] else { throw ItemStoreError.notFound("no location with key \(key)") }
            if request.expectedVersion != 0 && request.expectedVersion != before.version {
                throw ItemStoreError.aborted(
                    "location \(key) is at version \(before.version), not expected_version \(request.expectedVersion); read it again and retry")
            }
            var name = before.name, parent = before.parentKey
            if case .text(let value)? = fields["name"] { name = value }
            if case .text(let value)? = fields["parent_key"] { parent = value }
            try checkPlace(name: name, parent: parent, moving: before, tree: tree)
            let names = fields.keys.sorted()
            try db.execute(
                "UPDATE locations SET \(names.map { "\($0) = ?" }.joined(separator: ", ")), updated_at_ms = ?, version = version + 1 WHERE key = ?",
                names.map { fields[$0]! } + [.integer(now), .text(key)])
            try recordLocation("location.updated", key: key, now: now)
            let after = try locationTree()
            if name != before.name || parent != before.parentKey {
                // The words of every item below it name its path.
                try reindexItems(in: after.subtreeKeys(of: key), tree: after)
            }
            return try location(key: key, tree: after)
        }
    }

    /// Deletes an empty location: one that holds no items and no sublocations. Returns it as
    /// it was.
    @discardableResult
    public func deleteLocation(key: String, now: Int64) throws -> Location {
        let key = try ItemInput.key(key, field: "key")
        return try write {
            guard let deleted = try locationTree().byKey[key] else {
                throw ItemStoreError.notFound("no location with key \(key)")
            }
            let items = try db.scalar("SELECT count(*) FROM items WHERE location_key = ?", [.text(key)])?.int64Value ?? 0
            let children = try db.scalar("SELECT count(*) FROM locations WHERE parent_key = ?", [.text(key)])?.int64Value ?? 0
            guard items == 0 && children == 0 else {
                var held: [String] = []
                if items > 0 { held.append("\(items) item\(items == 1 ? "" : "s")") }
                if children > 0 { held.append("\(children) sublocation\(children == 1 ? "" : "s")") }
                throw ItemStoreError.failedPrecondition(
                    "location \(key) still holds \(held.joined(separator: " and ")); move or delete them first")
            }
            try recordLocation("location.deleted", key: key, now: now)
            try db.execute("DELETE FROM locations WHERE key = ?", [.text(key)])
            try db.execute("INSERT OR REPLACE INTO deleted_locations (key, deleted_at_ms) VALUES (?, ?)", [.text(key), .integer(now)])
            return deleted
        }
    }

    // MARK: Helpers

    /// The path of the location with `key` ('' for none).
    func locationPath(_ key: String) throws -> String {
        guard !key.isEmpty else { return "" }
        var names: [String] = []
        var current = key
        while !current.isEmpty, names.count <= ClaimInput.maxLocationDepth,
            let row = try db.query("SELECT name, parent_key FROM locations WHERE key = ?", [.text(current)]).first
        {
            names.insert(row[0].stringValue ?? "", at: 0)
            current = row[1].stringValue ?? ""
        }
        return names.joined(separator: " / ")
    }

    /// Items directly in each location ('' for no location).
    func locationItemCounts() throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for row in try db.query("SELECT location_key, count(*) FROM items GROUP BY location_key") {
            counts[row[0].stringValue ?? ""] = row[1].int64Value ?? 0
        }
        return counts
    }

    /// Refuses a parent that does not exist, a move under itself, a tree too deep, and a name a
    /// sibling has already.
    private func checkPlace(name: String, parent: String, moving: Location?, tree: LocationTree) throws {
        var depth: Int32 = 0
        if !parent.isEmpty {
            guard let parentLocation = tree.byKey[parent] else {
                throw ItemStoreError.notFound("parent_key: no location with key \(parent)")
            }
            if let moving, tree.subtreeKeys(of: moving.key).contains(parent) {
                throw ItemStoreError.failedPrecondition(
                    parent == moving.key
                        ? "location \(moving.key) cannot be its own parent"
                        : "location \(moving.key) cannot move under \(parentLocation.path), which is inside it")
            }
            depth = parentLocation.depth + 1
        }
        let height = moving.map { tree.height(of: $0.key) } ?? 0
        guard depth + height < Int32(ClaimInput.maxLocationDepth) else {
            throw ItemStoreError.failedPrecondition(
                "locations nest at most \(ClaimInput.maxLocationDepth) deep; this would make \(depth + height + 1)")
        }
        let sibling = tree.children(of: parent).compactMap { tree.byKey[$0] }.first {
            $0.name.lowercased() == name.lowercased() && $0.key != moving?.key
        }
        if let sibling {
            throw ItemStoreError.failedPrecondition(
                "\(parent.isEmpty ? "the top level" : tree.byKey[parent]!.path) has a location named \(ItemInput.quoted(sibling.name)) already (\(sibling.key)); choose another name")
        }
    }

    /// The location with `key`, counted.
    private func location(key: String, tree: LocationTree) throws -> Location {
        guard let location = tree.byKey[key] else { throw ItemStoreError.notFound("no location with key \(key)") }
        let counts = try locationItemCounts()
        return Self.counted(location, counts: counts, totals: tree.subtreeTotals(counts))
    }

    private static func counted(_ location: Location, counts: [String: Int64], totals: [String: Int64]) -> Location {
        var location = location
        location.itemCount = counts[location.key] ?? 0
        location.subtreeItemCount = totals[location.key] ?? 0
        return location
    }

    /// Re-writes the text index of every item in `keys`' locations (after a rename or move).
    private func reindexItems(in keys: Set<String>, tree: LocationTree) throws {
        for key in keys {
            let path = tree.byKey[key]?.path ?? ""
            for row in try db.query("SELECT \(Self.columns) FROM items WHERE location_key = ?", [.text(key)]) {
                try reindexText(id: row[0].int64Value ?? 0, item: Self.item(from: row), locationPath: path)
            }
        }
    }

    static func kind(_ kind: LocationKind) throws -> LocationKind {
        guard (0...4).contains(kind.rawValue) else {
            throw ItemStoreError.invalidArgument(
                "kind must be one of LOCATION_KIND_OTHER, _HOME, _FLOOR, _ROOM, _CONTAINER (0…4; got \(kind.rawValue))")
        }
        return kind
    }

    static func location(from row: Row) -> Location {
        var location = Location()
        location.key = row[0].stringValue ?? ""
        location.name = row[1].stringValue ?? ""
        location.parentKey = row[2].stringValue ?? ""
        location.kind = LocationKind(rawValue: Int32(truncatingIfNeeded: row[3].int64Value ?? 0))
        location.notes = row[4].stringValue ?? ""
        location.createdAtMs = row[5].int64Value ?? 0
        location.updatedAtMs = row[6].int64Value ?? 0
        location.version = row[7].int64Value ?? 0
        return location
    }
}

/// The location tree as the reads that value items see it (`ItemReads`).
extension ItemReads {
    /// Every location, as a tree.
    func locationTree() throws -> LocationTree {
        LocationTree(try db.query("SELECT \(ItemStore.locationColumns) FROM locations").map(ItemStore.location(from:)))
    }
}
