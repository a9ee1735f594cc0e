import Foundation
import JobQueue
import Proto
import SQLite
import Testing

@testable import ItemService

/// Locations, the claim fields, photo roles and the schema upgrade, on a real SQLite file.
@Suite struct InventoryStoreTests {
    @Test func locationsFormATreeListedDepthFirstWithPathsAndCounts() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let home = try store.createLocation(locationRequest("Home", kind: .home), now: 1)
        let ground = try store.createLocation(locationRequest("Ground floor", parent: home.key, kind: .floor), now: 2)
        let kitchen = try store.createLocation(locationRequest("Kitchen", parent: ground.key, kind: .room), now: 3)
        let bedroom = try store.createLocation(locationRequest("bedroom", parent: ground.key, kind: .room), now: 4)
        let cupboard = try store.createLocation(locationRequest("Cupboard", parent: kitchen.key, kind: .container), now: 5)
        #expect(cupboard.path == "Home / Ground floor / Kitchen / Cupboard" && cupboard.depth == 3)

        var fridge = createRequest("Fridge")
        fridge.locationKey = kitchen.key
        _ = try store.create(fridge, now: 6)
        var mugs = createRequest("Mugs")
        mugs.locationKey = cupboard.key
        mugs.quantity = 6
        _ = try store.create(mugs, now: 7)
        _ = try store.create(createRequest("Loose sock"), now: 8)

        let list = try store.listLocations(ListLocationsRequest())
        // Depth first, siblings by name whatever their case.
        #expect(list.locations.map(\.name) == ["Home", "Ground floor", "bedroom", "Kitchen", "Cupboard"])
        #expect(list.locations.map(\.depth) == [0, 1, 2, 2, 3])
        #expect(list.locations.map(\.itemCount) == [0, 0, 0, 1, 1])
        #expect(list.locations.map(\.subtreeItemCount) == [2, 2, 0, 2, 1])
        #expect(list.unplacedItemCount == 1)
        var sub = ListLocationsRequest()
        sub.rootKey = kitchen.key
        #expect(try store.listLocations(sub).locations.map(\.name) == ["Kitchen", "Cupboard"])

        // Every item in one location, or in its whole subtree.
        var inKitchen = ListItemsRequest()
        inKitchen.locationKey = kitchen.key
        #expect(try store.list(inKitchen).items.map(\.name) == ["Fridge", "Mugs"])
        inKitchen.excludeSublocations = true
        #expect(try store.list(inKitchen).items.map(\.name) == ["Fridge"])
        var unplaced = ListItemsRequest()
        unplaced.unplaced = true
        #expect(try store.list(unplaced).items.map(\.name) == ["Loose sock"])
        _ = bedroom
    }

    @Test func aLocationMovesButNeverUnderItselfAndIsDeletedOnlyWhenEmpty() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let home = try store.createLocation(locationRequest("Home"), now: 1)
        let kitchen = try store.createLocation(locationRequest("Kitchen", parent: home.key), now: 2)
        let cupboard = try store.createLocation(locationRequest("Cupboard", parent: kitchen.key), now: 3)
        let garage = try store.createLocation(locationRequest("Garage"), now: 4)

        var move = UpdateLocationRequest()
        move.key = kitchen.key
        move.updateMask = ["parent_key"]
        move.parentKey = cupboard.key
        let cycle = storeError { try store.updateLocation(move, now: 5) }
        #expect(cycle?.rpcStatus == .failedPrecondition && cycle?.description.contains("inside it") == true)
        move.parentKey = kitchen.key
        #expect(storeError { try store.updateLocation(move, now: 5) }?.description.contains("its own parent") == true)
        move.parentKey = garage.key
        let moved = try store.updateLocation(move, now: 6)
        #expect(moved.path == "Garage / Kitchen" && moved.version == 2)
        #expect(try store.getLocation(key: cupboard.key).path == "Garage / Kitchen / Cupboard")

        // A sibling's name, in any case, is taken.
        let twin = storeError { try store.createLocation(locationRequest("kitchen", parent: garage.key), now: 7) }
        #expect(twin?.rpcStatus == .failedPrecondition && twin?.description.contains("Garage") == true)
        #expect(storeError { try store.createLocation(locationRequest("Attic", parent: UUID().uuidString.lowercased()), now: 7) }?
            .rpcStatus == .notFound)

        for name in ["Toaster", "Kettle"] {
            var item = createRequest(name)
            item.locationKey = cupboard.key
            _ = try store.create(item, now: 8)
        }
        let full = storeError { try store.deleteLocation(key: cupboard.key, now: 9) }
        #expect(full?.rpcStatus == .failedPrecondition)
        #expect(full?.description == "location \(cupboard.key) still holds 2 items; move or delete them first")
        let parent = storeError { try store.deleteLocation(key: kitchen.key, now: 9) }
        #expect(parent?.description.contains("1 sublocation") == true)
        for item in try allItems(store) { _ = try store.delete(key: item.key, now: 10) }
        try store.deleteLocation(key: cupboard.key, now: 11)
        #expect(storeError { try store.getLocation(key: cupboard.key) }?.rpcStatus == .notFound)
        // Its key is not given out again.
        var again = locationRequest("Cupboard", parent: kitchen.key)
        again.key = cupboard.key
        #expect(storeError { try store.createLocation(again, now: 12) }?.rpcStatus == .failedPrecondition)
    }

    @Test func everyClaimFieldIsStoredReadBackAndUpdatedByMask() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let room = try store.createLocation(locationRequest("Living room", kind: .room), now: 1)
        let category = try store.createCategory(categoryRequest("Electronics", years: 5, floor: 20), now: 1)
        var request = createRequest("Télévision OLED", serial: "SN-123")
        request.locationKey = room.key
        request.quantity = 2
        request.brand = "Sony"
        request.model = "XR-55A80L"
        request.notes = "Wall-mounted.\nRemote in the drawer."
        request.purchaseDate = "2023-11-24"
        request.purchasePrice = Money(currency: "EUR", minorUnits: 129_900)
        request.purchasePlace = "Fnac"
        request.replacementValue = Money(currency: "", minorUnits: 139_900)
        request.replacementSource = "https://example.org/quote"
        request.replacementAsOf = "2026-01-02"
        request.warrantyExpires = "2025-11-24"
        request.tags = ["living", "TV", "tv", " electronics "]
        request.categoryKey = category.key
        request.customFields = [customField("Colour", "black"), customField("Mount", "VESA 300")]
        let item = try store.create(request, now: 2).item
        #expect(item.quantity == 2 && item.brand == "Sony" && item.model == "XR-55A80L")
        #expect(item.notes == "Wall-mounted.\nRemote in the drawer.")
        #expect(item.purchasePrice == Money(currency: "EUR", minorUnits: 129_900))
        #expect(item.replacementValue == Money(currency: "", minorUnits: 139_900))
        // Trimmed, and a repeat in another case dropped.
        #expect(item.tags == ["living", "TV", "electronics"])
        #expect(item.customFields.map(\.name) == ["Colour", "Mount"])
        #expect(try store.get(key: item.key) == item)

        var update = UpdateItemRequest()
        update.key = item.key
        update.updateMask = ["brand", "quantity", "tags", "purchasePrice", "custom_fields"]
        update.brand = "Sony Group"
        update.quantity = 0
        update.tags = ["tv"]
        let updated = try store.update(update, now: 3)
        #expect(updated.brand == "Sony Group" && updated.quantity == 1 && updated.tags == ["tv"])
        #expect(updated.purchasePrice == nil && updated.customFields.isEmpty && updated.version == 2)
        // Untouched fields stay.
        #expect(updated.model == "XR-55A80L" && updated.locationKey == room.key && updated.purchaseDate == "2023-11-24")

        var bad = createRequest("Lamp")
        bad.purchaseDate = "2023-02-30"
        #expect(storeError { try store.create(bad, now: 4) }?.description
            == "purchase_date must be a date as YYYY-MM-DD, like 2024-03-17 (got \"2023-02-30\")")
        bad = createRequest("Lamp")
        bad.replacementValue = Money(currency: "dollars", minorUnits: 5)
        #expect(storeError { try store.create(bad, now: 4) }?.description.contains("replacement_value.currency") == true)
        bad = createRequest("Lamp")
        bad.purchasePrice = Money(currency: "USD", minorUnits: -1)
        #expect(storeError { try store.create(bad, now: 4) }?.description == "purchase_price.minor_units must be ≥ 0 (got -1)")
        bad = createRequest("Lamp")
        bad.quantity = -2
        #expect(storeError { try store.create(bad, now: 4) }?.rpcStatus == .invalidArgument)
        bad = createRequest("Lamp")
        bad.customFields = [customField("A", "1"), customField("a", "2")]
        #expect(storeError { try store.create(bad, now: 4) }?.description.contains("more than once") == true)
        bad = createRequest("Lamp")
        bad.tags = Array(repeating: "x", count: 1) + (0..<40).map { "tag\($0)" }
        #expect(storeError { try store.create(bad, now: 4) }?.description.contains("at most 32 tags") == true)
        bad = createRequest("Lamp")
        bad.locationKey = UUID().uuidString.lowercased()
        #expect(storeError { try store.create(bad, now: 4) }?.rpcStatus == .notFound)
        var unknownMask = UpdateItemRequest()
        unknownMask.key = item.key
        unknownMask.updateMask = ["colour"]
        #expect(storeError { try store.update(unknownMask, now: 5) }?.description.contains("location_key") == true)
        #expect(try store.stats().itemCount == 1)
    }

    @Test func photoRolesFollowTheirPhotosAndMakeTheEvidenceListItemsFiltersOn() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let item = try store.create(createRequest("Camera"), now: 1).item
        let plain = try store.create(createRequest("Chair", serial: "C-1"), now: 1).item
        let (photo, receipt) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        _ = try store.attachPhoto(attachRequest(item.key, photo), now: 2)
        var attach = attachRequest(item.key, receipt)
        attach.role = .receipt
        var after = try store.attachPhoto(attach, now: 3)
        #expect(after.photos.map(\.role) == [.photo, .receipt])
        #expect(after.photos.map(\.imageKey) == after.photoKeys)

        var missingReceipt = ListItemsRequest()
        missingReceipt.missing = [.receipt]
        #expect(try store.list(missingReceipt).items.map(\.name) == ["Chair"])
        var missingSerial = ListItemsRequest()
        missingSerial.missing = [.serial]
        #expect(try store.list(missingSerial).items.map(\.name) == ["Camera"])

        // The photo of the plate is the serial; a reorder keeps each role with its photo.
        var role = SetPhotoRoleRequest()
        role.itemKey = item.key
        role.imageKey = photo
        role.role = .serialPlate
        after = try store.setPhotoRole(role, now: 4)
        #expect(try store.list(missingSerial).items.isEmpty)
        var reorder = ReorderPhotosRequest()
        reorder.itemKey = item.key
        reorder.imageKeys = [receipt, photo]
        after = try store.reorderPhotos(reorder, now: 5)
        #expect(after.photos.map(\.role) == [.receipt, .serialPlate])
        // The same role again changes nothing, not even the version.
        #expect(try store.setPhotoRole(role, now: 6).version == after.version)
        role.role = PhotoRole(rawValue: 9)
        #expect(storeError { try store.setPhotoRole(role, now: 6) }?.rpcStatus == .invalidArgument)
        role.role = .damage
        role.itemKey = plain.key
        #expect(storeError { try store.setPhotoRole(role, now: 6) }?.rpcStatus == .failedPrecondition)

        var detach = DetachPhotoRequest()
        detach.itemKey = item.key
        detach.imageKey = receipt
        after = try store.detachPhoto(detach, now: 7)
        #expect(after.photos.map(\.role) == [.serialPlate])
        #expect(try store.list(missingReceipt).items.map(\.name) == ["Camera", "Chair"])
        // A repeat attach leaves the role unless it names one.
        #expect(try store.attachPhoto(attachRequest(item.key, photo), now: 8).photos.map(\.role) == [.serialPlate])
        var reRole = attachRequest(item.key, photo)
        reRole.role = .damage
        #expect(try store.attachPhoto(reRole, now: 9).photos.map(\.role) == [.damage])
    }

    @Test func aVersionSixDatabaseIsUpgradedWithItsItemsSearchableAndTheirEvidenceKnown() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let photo = UUID().uuidString.lowercased()
        do {
            // As a version-6 build left it, with one item of each kind.
            let db = try oldDatabase(path, version: 6)
            #expect(try db.userVersion == 6)
            try db.execute(
                """
                INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position, photo_keys, primary_photo_key)
                VALUES ('\(UUID().uuidString.lowercased())', 'Crème brûlée torch', 'T-9', 40, 1, 1, 1, 1, '\(photo)', '\(photo)'),
                       ('\(UUID().uuidString.lowercased())', 'Blank', '', 0, 1, 1, 1, 2, '', '')
                """)
            try db.close()
        }
        let store = try ItemStore(path: path)
        #expect(try store.db.userVersion == ItemStore.schemaVersion)
        let items = try allItems(store)
        #expect(items.map(\.quantity) == [1, 1])
        #expect(items[0].photos.map(\.role) == [.photo])
        var search = ListItemsRequest()
        search.search = "creme"
        #expect(try store.list(search).items.map(\.name) == ["Crème brûlée torch"])
        var missing = ListItemsRequest()
        missing.missing = [.photo]
        #expect(try store.list(missing).items.map(\.name) == ["Blank"])
        missing.missing = [.value, .serial]
        #expect(try store.list(missing).items.map(\.name) == ["Blank"])
        missing.missing = [.purchaseDate]
        #expect(try store.list(missing).totalCount == 2)
    }
}

/// A database as the build of schema `version` (5 or later) made it: its migrations only.
func oldDatabase(_ path: String, version: Int) throws -> Database {
    let db = try Database(path: path)
    _ = try ItemStore.migrator.migrate(db)
    try JobStore.migrate(db)
    let jobs = try JobStore(db: db, queues: [CascadeQueue.configuration(), CaptureQueue.configuration()])
    try ItemStore.moveOutboxIntoJobs(db, jobs)
    _ = try Migrator(ItemStore.laterMigrator.migrations.filter { $0.version <= version }).migrate(db)
    return db
}

func openStore() throws -> (TemporaryFolder, ItemStore) {
    let folder = try TemporaryFolder()
    return (folder, try ItemStore(path: folder.path + "/items.db"))
}

func locationRequest(_ name: String, parent: String = "", kind: LocationKind = .room) -> CreateLocationRequest {
    var request = CreateLocationRequest()
    request.name = name
    request.parentKey = parent
    request.kind = kind
    return request
}

func categoryRequest(_ name: String, years: Int32 = 0, floor: Int32 = 0, limit: Int64 = 0) -> CreateCategoryRequest {
    var request = CreateCategoryRequest()
    request.name = name
    request.depreciation = years > 0 ? .straightLine : .none
    request.usefulLifeYears = years
    request.floorPercent = floor
    if limit > 0 { request.limit = Money(currency: "", minorUnits: limit) }
    return request
}

func customField(_ name: String, _ value: String) -> CustomField {
    var field = CustomField()
    field.name = name
    field.value = value
    return field
}

func attachRequest(_ item: String, _ image: String) -> AttachPhotoRequest {
    var request = AttachPhotoRequest()
    request.itemKey = item
    request.imageKey = image
    return request
}
