import Proto
import SQLite

/// What an import (transfer.proto, docs/protocol.md §19) has staged: the export's locations
/// (parents first), categories, items and the checksums of their photos.
public struct StagedImport: Sendable {
    var sourceHead: HistoryHead?
    var locations: [Location] = []
    var categories: [Category] = []
    var items: [Item] = []
    /// Image key → "sha256:<hex>".
    var photos: [String: String] = [:]
}

/// What committing a staged import would do now: the conflicts, and what is new.
struct ImportPlan: Sendable {
    var conflicts: [ImportConflict] = []
    var locations: [Location] = []
    var categories: [Category] = []
    var items: [Item] = []
    var locationsUnchanged: Int64 = 0
    var categoriesUnchanged: Int64 = 0
    var itemsUnchanged: Int64 = 0

    /// The photos of the items to create, each with the keys of the items that list it.
    var photos: [String: [String]] {
        var photos: [String: [String]] = [:]
        for item in items { for key in item.photoKeys { photos[key, default: []].append(item.key) } }
        return photos
    }

    /// The response for this plan (`committed`: whether it was written).
    func response(committed: Bool) -> CommitImportResponse {
        var response = CommitImportResponse()
        response.committed = committed
        response.conflicts = conflicts
        response.locationsCreated = Int64(locations.count)
        response.categoriesCreated = Int64(categories.count)
        response.itemsCreated = Int64(items.count)
        response.photosAttached = Int64(items.reduce(0) { $0 + $1.photoKeys.count })
        response.locationsUnchanged = locationsUnchanged
        response.categoriesUnchanged = categoriesUnchanged
        response.itemsUnchanged = itemsUnchanged
        return response
    }
}

extension ItemStore {
    /// Compares every staged subject with what the installation holds: one held with the same
    /// content is unchanged; one held with other content, deleted here, named like another, or
    /// needing a location or category that is not created is a conflict. The rest is new.
    func planImport(_ staged: StagedImport) throws -> ImportPlan {
        var plan = ImportPlan()
        let tree = try locationTree()
        // Locations present after the import, and each parent's children's names (lower case).
        var present = Set(tree.byKey.keys)
        var names: [String: Set<String>] = [:]
        for location in tree.byKey.values { names[location.parentKey, default: []].insert(location.name.lowercased()) }
        for location in staged.locations {
            if let held = tree.byKey[location.key] {
                if let conflict = Self.compare("location", location.key, Self.storedFields(location), Self.storedFields(held)) {
                    plan.conflicts.append(conflict)
                } else {
                    plan.locationsUnchanged += 1
                }
            } else if let deleted = try deletedConflict("location", location.key, table: "deleted_locations") {
                plan.conflicts.append(deleted)
            } else if !location.parentKey.isEmpty && !present.contains(location.parentKey) {
                plan.conflicts.append(Self.conflict("location", location.key, ["parent_key"],
                    "location \(location.key): its parent \(location.parentKey) is not imported (it conflicts)"))
            } else if names[location.parentKey, default: []].contains(location.name.lowercased()) {
                plan.conflicts.append(Self.conflict("location", location.key, ["name"],
                    "location \(location.key): its parent here has a location named \(ItemInput.quoted(location.name)) already; rename one"))
            } else {
                plan.locations.append(location)
                present.insert(location.key)
                names[location.parentKey, default: []].insert(location.name.lowercased())
            }
        }
        var categories = Set<String>()
        var categoryNames = Set<String>()
        for row in try db.query("SELECT key, name FROM categories") {
            categories.insert(row[0].stringValue ?? "")
            categoryNames.insert((row[1].stringValue ?? "").lowercased())
        }
        for category in staged.categories {
            if categories.contains(category.key) {
                if let conflict = Self.compare("category", category.key, Self.storedFields(category), Self.storedFields(try storedCategory(category.key))) {
                    plan.conflicts.append(conflict)
                } else {
                    plan.categoriesUnchanged += 1
                }
            } else if let deleted = try deletedConflict("category", category.key, table: "deleted_categories") {
                plan.conflicts.append(deleted)
            } else if categoryNames.contains(category.name.lowercased()) {
                plan.conflicts.append(Self.conflict("category", category.key, ["name"],
                    "category \(category.key): a category named \(ItemInput.quoted(category.name)) exists here already; rename one"))
            } else {
                plan.categories.append(category)
                categories.insert(category.key)
                categoryNames.insert(category.name.lowercased())
            }
        }
        for item in staged.items {
            if let held = try find(key: item.key) {
                if let conflict = Self.compare("item", item.key, Self.content(item), Self.content(held)) {
                    plan.conflicts.append(conflict)
                } else {
                    plan.itemsUnchanged += 1
                }
            } else if let deleted = try deletedConflict("item", item.key, table: "deleted_items") {
                plan.conflicts.append(deleted)
            } else if !item.locationKey.isEmpty && !present.contains(item.locationKey) {
                plan.conflicts.append(Self.conflict("item", item.key, ["location_key"],
                    "item \(item.key): its location \(item.locationKey) is not imported (it conflicts)"))
            } else if !item.categoryKey.isEmpty && !categories.contains(item.categoryKey) {
                plan.conflicts.append(Self.conflict("item", item.key, ["category_key"],
                    "item \(item.key): its category \(item.categoryKey) is not imported (it conflicts)"))
            } else if let photo = try item.photoKeys.first(where: {
                try db.scalar("SELECT 1 FROM cascaded_photos WHERE image_key = ?", [.text($0)]) != nil
            }) {
                plan.conflicts.append(Self.conflict("item", item.key, ["photo_keys"],
                    "item \(item.key): its photo \(photo) was deleted here with another item; its key cannot come back"))
            } else {
                plan.items.append(item)
            }
        }
        return plan
    }

    /// Creates what `plan` says is new, in one transaction, each recorded as `….imported`
    /// carrying the source's history head. `checksums`: each photo's SHA-256 as the image
    /// service reported it. Items keep their key, fields, photos (order, primary, roles) and
    /// timestamps; they start at version 1, appended to the manual order in the export's order.
    func applyImport(_ plan: ImportPlan, source: HistoryHead?, checksums: [String: String], now: Int64) throws {
        let saved = importing
        importing = source ?? HistoryHead()
        defer { importing = saved }
        try write {
            for location in plan.locations {
                var request = CreateLocationRequest()
                request.key = location.key
                request.name = location.name
                request.parentKey = location.parentKey
                request.kind = location.kind
                request.notes = location.notes
                _ = try Self.naming("location \(location.key)") { try addLocation(request, now: now) }
            }
            for category in plan.categories {
                var request = CreateCategoryRequest()
                request.key = category.key
                request.name = category.name
                request.depreciation = category.depreciation
                request.usefulLifeYears = category.usefulLifeYears
                request.floorPercent = category.floorPercent
                request.limit = category.limit
                _ = try Self.naming("category \(category.key)") { try addCategory(request, now: now) }
            }
            for item in plan.items {
                _ = try Self.naming("item \(item.key)") { try create(Self.createRequest(item), now: now, record: false) }
                var stored = try existing(key: item.key)
                stored.photoKeys = item.photoKeys
                stored.primaryPhotoKey = item.primaryPhotoKey
                stored.photos = item.photos
                try db.execute(
                    "UPDATE items SET photo_keys = ?, primary_photo_key = ?, photo_roles = ?, evidence = ?, created_at_ms = ?, updated_at_ms = ? WHERE key = ?",
                    [
                        .text(item.photoKeys.joined(separator: " ")), .text(item.primaryPhotoKey), .text(ClaimColumns.roles(item.photos)),
                        .integer(ItemEvidence.of(stored).rawValue), .integer(item.createdAtMs), .integer(item.updatedAtMs), .text(item.key),
                    ])
                for photo in item.photoKeys {
                    try db.execute(
                        "INSERT OR IGNORE INTO item_photos (image_key, item_id, checksum) SELECT ?, id, ? FROM items WHERE key = ?",
                        [.text(photo), .text(checksums[photo] ?? ""), .text(item.key)])
                }
                try recordItem("item.created", key: item.key, now: now)
            }
        }
    }

    /// Checks a staged item on arrival (AddImport): a key, a name, photos that agree with
    /// each other and have checksums; the rest is checked as CreateItem checks it, at commit.
    static func checkStaged(_ item: Item, index: Int, photos: [String: String]) throws {
        let key = try ItemInput.key(item.key, field: "items[\(index)].key")
        guard key == item.key else { throw ItemStoreError.invalidArgument("items[\(index)].key must be lower case (got \(item.key))") }
        guard item.photoKeys.count <= ItemInput.maxPhotosPerItem else {
            throw ItemStoreError.invalidArgument("item \(key) has \(item.photoKeys.count) photos, more than \(ItemInput.maxPhotosPerItem)")
        }
        guard item.photos.map(\.imageKey) == item.photoKeys, Set(item.photoKeys).count == item.photoKeys.count else {
            throw ItemStoreError.invalidArgument("item \(key): photos must list photo_keys once each, in their order")
        }
        guard item.primaryPhotoKey.isEmpty ? item.photoKeys.isEmpty : item.photoKeys.contains(item.primaryPhotoKey) else {
            throw ItemStoreError.invalidArgument("item \(key): primary_photo_key \(item.primaryPhotoKey) is not one of its photo_keys")
        }
        for (offset, photo) in item.photos.enumerated() {
            _ = try ItemInput.key(photo.imageKey, field: "item \(key) photo_keys[\(offset)]")
            _ = try role(photo.role)
            guard photos[photo.imageKey] != nil else {
                throw ItemStoreError.invalidArgument("item \(key): photo \(photo.imageKey) has no checksum (add it to photos first)")
            }
        }
    }

    /// Runs `body`, naming `subject` in what the store refuses: one bad subject stops the whole
    /// import, and the message says which and that nothing was written.
    private static func naming<T>(_ subject: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ItemStoreError {
            let message = "\(subject): \(error.description); nothing was imported"
            switch error {
            case .invalidArgument: throw ItemStoreError.invalidArgument(message)
            case .notFound: throw ItemStoreError.notFound(message)
            case .outOfRange: throw ItemStoreError.outOfRange(message)
            case .aborted: throw ItemStoreError.aborted(message)
            case .failedPrecondition: throw ItemStoreError.failedPrecondition(message)
            case .closed: throw error
            }
        }
    }

    /// CreateItem's request for the fields of `item`.
    static func createRequest(_ item: Item) -> CreateItemRequest {
        var request = CreateItemRequest()
        request.key = item.key
        request.name = item.name
        request.serialNumber = item.serialNumber
        request.valueInDollars = item.valueInDollars
        request.locationKey = item.locationKey
        request.quantity = item.quantity
        request.brand = item.brand
        request.model = item.model
        request.notes = item.notes
        request.purchaseDate = item.purchaseDate
        request.purchasePrice = item.purchasePrice
        request.purchasePlace = item.purchasePlace
        request.replacementValue = item.replacementValue
        request.replacementSource = item.replacementSource
        request.replacementAsOf = item.replacementAsOf
        request.warrantyExpires = item.warrantyExpires
        request.tags = item.tags
        request.categoryKey = item.categoryKey
        request.customFields = item.customFields
        return request
    }

    /// An item's content: everything but its version, timestamps and valuation.
    static func content(_ item: Item) -> Item {
        var item = item
        item.version = 0
        item.createdAtMs = 0
        item.updatedAtMs = 0
        item.valuation = nil
        return item
    }

    /// A location's own fields: no timestamps, version, path or counts.
    static func storedFields(_ location: Location) -> Location {
        var kept = Location()
        kept.key = location.key
        kept.name = location.name
        kept.parentKey = location.parentKey
        kept.kind = location.kind
        kept.notes = location.notes
        return kept
    }

    /// A category's own fields: no timestamps, version or count.
    static func storedFields(_ category: Category) -> Category {
        var kept = Category()
        kept.key = category.key
        kept.name = category.name
        kept.depreciation = category.depreciation
        kept.usefulLifeYears = category.usefulLifeYears
        kept.floorPercent = category.floorPercent
        kept.limit = (category.limit?.minorUnits ?? 0) == 0 ? nil : category.limit
        return kept
    }

    /// The proto names of the fields whose values differ.
    static func differing<Message: ProtoMessage>(_ a: Message, _ b: Message) -> [String] {
        guard a.serializedBytes() != b.serializedBytes() else { return [] }
        let fields = zip(Mirror(reflecting: a).children, Mirror(reflecting: b).children).compactMap { left, right -> String? in
            guard let label = left.label, String(describing: left.value) != String(describing: right.value) else { return nil }
            return snakeCase(label)
        }
        return fields.isEmpty ? ["its encoding"] : fields
    }

    private static func snakeCase(_ name: String) -> String {
        var out = ""
        for character in name {
            if character.isUppercase {
                out += "_" + character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }

    /// A subject held here already: nil when its content is the staged one's (unchanged), else
    /// the conflict naming the fields that differ.
    private static func compare<Message: ProtoMessage>(_ kind: String, _ key: String, _ staged: Message, _ held: Message) -> ImportConflict? {
        let fields = differing(staged, held)
        guard !fields.isEmpty else { return nil }
        return conflict(kind, key, fields, "\(kind) \(key) exists here with other \(fields.joined(separator: ", ")); change or delete one of them")
    }

    /// The conflict of a key deleted here (its tombstone in `table`), nil when it was not.
    private func deletedConflict(_ kind: String, _ key: String, table: String) throws -> ImportConflict? {
        guard let deletedAt = try db.scalar("SELECT deleted_at_ms FROM \(table) WHERE key = ?", [.text(key)])?.int64Value else { return nil }
        return Self.conflict(kind, key, [], "\(kind) \(key) was deleted here at \(deletedAt) ms; its key cannot come back")
    }

    private static func conflict(_ kind: String, _ key: String, _ fields: [String], _ message: String) -> ImportConflict {
        var conflict = ImportConflict()
        conflict.kind = kind
        conflict.key = key
        conflict.fields = fields
        conflict.message = message
        return conflict
    }
}
