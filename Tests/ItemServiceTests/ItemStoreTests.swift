import Foundation
import Proto
import SQLite
import Locking
import Testing

@testable import ItemService

/// The store on a real SQLite file: fields, versions, bad input, persistence, seed and schema.
@Suite struct ItemStoreTests {
    @Test func createThenGetReturnsEveryField() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let (item, created) = try store.create(createRequest("Rusty Spork", serial: "4X7B", value: 42), now: 1_000)
        #expect(created)
        #expect(UUID(uuidString: item.key) != nil && item.key == item.key.lowercased())
        let read = try store.get(key: item.key)
        #expect(read == item)
        #expect(read.name == "Rusty Spork" && read.serialNumber == "4X7B" && read.valueInDollars == 42)
        #expect(read.createdAtMs == 1_000 && read.updatedAtMs == 1_000 && read.version == 1)
        #expect(read.photoKeys.isEmpty && read.primaryPhotoKey == "")
    }

    @Test func createWithTheSameClientKeyReturnsTheFirstItem() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let key = UUID().uuidString.uppercased()
        let first = try store.create(createRequest("Shiny Mac", value: 7, key: key), now: 1)
        let second = try store.create(createRequest("Other name", value: 9, key: key), now: 2)
        #expect(first.created && !second.created)
        #expect(second.item == first.item)
        #expect(first.item.key == key.lowercased())
        #expect(try store.stats().itemCount == 1)
    }

    @Test func createWithTheKeyOfADeletedItemIsRefusedNotResurrected() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let key = UUID().uuidString.lowercased()
        _ = try store.create(createRequest("Fluffy Bear", key: key), now: 1)
        _ = try store.delete(key: key, now: 2)
        let error = storeError { try store.create(createRequest("Fluffy Bear", key: key), now: 3) }
        guard case let .failedPrecondition(message)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(message.contains(key))
    }

    @Test func randomItemsFollowTheSeed() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        var request = CreateItemRequest()
        request.random = true
        for _ in 0..<50 {
            let item = try store.create(request, now: 1).item
            let parts = item.name.split(separator: " ")
            #expect(parts.count == 2 && ["Fluffy", "Rusty", "Shiny"].contains(parts[0]) && ["Bear", "Spork", "Mac"].contains(parts[1]))
            #expect((0...99).contains(item.valueInDollars))
            let serial = Array(item.serialNumber)
            #expect(serial.count == 4 && serial[0].isNumber && serial[1].isUppercase && serial[2].isNumber && serial[3].isUppercase)
        }
        request.name = "Mine"
        guard case let .invalidArgument(message)? = storeError({ try store.create(request, now: 1) }) else {
            Issue.record("random with a name was accepted"); return
        }
        #expect(message.contains("random") && message.contains("\"Mine\""))
    }

    @Test(arguments: [
        (createRequest(""), "name must not be empty"),
        (createRequest("   "), "name must not be empty or blank (got \"   \")"),
        (createRequest(String(repeating: "x", count: 257)), "name must be at most 256 characters (got 257)"),
        (createRequest("Spork", value: -5), "value_in_dollars must be ≥ 0 (got -5)"),
        (createRequest("Spork", value: 5_000_000_000), "value_in_dollars must be ≤ 1000000000 (got 5000000000)"),
        (createRequest("Spork", serial: String(repeating: "9", count: 65)), "serial_number must be at most 64 characters (got 65)"),
        (createRequest("Spork", key: "not-a-uuid"), "key must be a UUID"),
        (createRequest("Spork", key: "not-a-uuid"), "(got \"not-a-uuid\")"),
    ])
    func badCreateInputIsRefusedNamingTheFieldAndValue(_ request: CreateItemRequest, _ expected: String) throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let error = storeError { try store.create(request, now: 1) }
        guard case let .invalidArgument(message)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(message.contains(expected), "\(message)")
        #expect(try store.stats().itemCount == 0)
    }

    @Test func updateChangesOnlyMaskedFieldsAndBumpsTheVersion() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let item = try store.create(createRequest("Rusty Spork", serial: "4X7B", value: 42), now: 1).item
        var update = UpdateItemRequest()
        update.key = item.key
        update.updateMask = ["value_in_dollars"]
        update.name = "ignored"
        update.valueInDollars = 50
        update.expectedVersion = 1
        let updated = try store.update(update, now: 5)
        #expect(updated.name == "Rusty Spork" && updated.valueInDollars == 50 && updated.version == 2 && updated.updatedAtMs == 5)
        #expect(updated.createdAtMs == 1)

        // expected_version 1 is stale now.
        guard case let .aborted(message)? = storeError({ try store.update(update, now: 6) }) else {
            Issue.record("a stale version was accepted"); return
        }
        #expect(message.contains("version 2") && message.contains("expected_version 1"))
        update.updateMask = ["colour"]
        update.expectedVersion = 0
        guard case let .invalidArgument(unknown)? = storeError({ try store.update(update, now: 6) }) else {
            Issue.record("an unknown mask field was accepted"); return
        }
        #expect(unknown.contains("\"colour\""))
        update.updateMask = []
        #expect(storeError { try store.update(update, now: 6) } != nil)
        update.key = UUID().uuidString
        update.updateMask = ["name"]
        update.name = "x"
        guard case .notFound? = storeError({ try store.update(update, now: 6) }) else { Issue.record("unknown key updated"); return }
    }

    @Test func unknownAndMalformedKeysAreNotFoundAndInvalid() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let missing = UUID().uuidString.lowercased()
        guard case let .notFound(message)? = storeError({ try store.get(key: missing) }) else { Issue.record("found"); return }
        #expect(message.contains(missing))
        guard case .invalidArgument? = storeError({ try store.get(key: "12345") }) else { Issue.record("accepted"); return }
        guard case .notFound? = storeError({ try store.delete(key: missing, now: 1) }) else { Issue.record("deleted"); return }
    }

    @Test func writesPersistAcrossReopen() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        var keys: [String] = []
        do {
            let store = try ItemStore(path: path)
            for index in 0..<5 { keys.append(try store.create(createRequest("Item \(index)", value: Int64(index)), now: 1).item.key) }
            try store.move(from: 4, to: 0)
            _ = try store.delete(key: keys[2], now: 2)
            try store.close()
        }
        let reopened = try ItemStore(path: path)
        // FULL: in WAL mode an acknowledged commit is fsynced before the call returns.
        #expect(try reopened.db.scalar("PRAGMA synchronous")?.int64Value == 2)
        #expect(try allItems(reopened).map(\.key) == [keys[4], keys[0], keys[1], keys[3]])
        #expect(try reopened.stats().pendingCascades == 1)
        let db = try Database(path: path)
        #expect(try db.scalar("PRAGMA journal_mode")?.stringValue == "wal")
        #expect(try db.userVersion == ItemStore.schemaVersion)
    }

    @Test func seedDatabaseIsCopiedOnlyWhenNoneExists() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let seedPath = folder.path + "/seed.db"
        // The seed stays open: its last commit is still in its WAL file, not in seed.db itself.
        let seed = try ItemStore(path: seedPath)
        let seeded = try seed.create(createRequest("Seeded Bear", serial: "1A2B", value: 3), now: 1).item
        defer { try? seed.close() }
        let path = folder.path + "/items.db"
        do {
            let store = try ItemStore(path: path, seedPath: seedPath)
            #expect(try store.get(key: seeded.key) == seeded)
            _ = try store.create(createRequest("Mine"), now: 2)
            try store.close()
        }
        // A database exists now: the seed is not copied over it again.
        let again = try ItemStore(path: path, seedPath: seedPath)
        #expect(try again.stats().itemCount == 2)
        #expect(throws: ItemStoreError.self) { try ItemStore(path: folder.path + "/other.db", seedPath: folder.path + "/nope.db") }
    }

    @Test func seedCopyIsSyncedBeforeItsRenameAndItsFolderAfter() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let seedPath = folder.path + "/seed.db"
        let seed = try ItemStore(path: seedPath)
        let seeded = try seed.create(createRequest("Seeded Bear"), now: 1).item
        try seed.close()
        let path = folder.path + "/items.db"
        // Each sync: the path, and whether the database was in place yet.
        let syncs = Locked<[(path: String, inPlace: Bool, size: Int)]>([])
        let counting = FileSync { synced in
            let size = (try? FileManager.default.attributesOfItem(atPath: synced)[.size] as? Int) ?? -1
            syncs.withLock { $0.append((synced, FileManager.default.fileExists(atPath: path), size)) }
            try FileSync.system.sync(synced)
        }
        let store = try ItemStore(path: path, seedPath: seedPath, fileSync: counting)
        #expect(try store.get(key: seeded.key) == seeded)
        let calls = syncs.withLock { $0 }
        #expect(calls.count == 2)
        // First the whole copy, beside the target; then, once renamed, the folder that names it.
        #expect(calls.first.map { $0.path.hasPrefix(path + ".seed-") && !$0.inPlace } == true)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(calls.first?.size == size)
        #expect(calls.last.map { $0.path == folder.path && $0.inPlace } == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".seed-") }.isEmpty)
    }

    @Test func aSeedCopyThatCannotBeSyncedLeavesNoDatabaseSoTheNextStartCopiesAgain() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let seedPath = folder.path + "/seed.db"
        let seed = try ItemStore(path: seedPath)
        let seeded = try seed.create(createRequest("Seeded Bear"), now: 1).item
        try seed.close()
        let path = folder.path + "/items.db"
        struct Refused: Error {}
        for failing in [0, 1] {
            let calls = Locked(0)
            let sync = FileSync { synced in
                let call = calls.withLock { count in defer { count += 1 }; return count }
                if call == failing { throw Refused() }
                try FileSync.system.sync(synced)
            }
            #expect(throws: Refused.self) { try ItemStore(path: path, seedPath: seedPath, fileSync: sync) }
            #expect(!FileManager.default.fileExists(atPath: path), "sync \(failing) failed, yet a database was left")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".seed-") }.isEmpty)
        }
        #expect(try ItemStore(path: path, seedPath: seedPath).get(key: seeded.key) == seeded)
    }

    @Test func deleteNamesThePhotosNoOtherItemHoldsAndAttachRefusesThemFromThen() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let doomed = try store.create(createRequest("Doomed"), now: 1).item
        let other = try store.create(createRequest("Other"), now: 1).item
        let (only, shared, later) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        for (item, image) in [(doomed, only), (doomed, shared), (other, shared), (doomed, later)] {
            var attach = AttachPhotoRequest()
            attach.itemKey = item.key
            attach.imageKey = image
            _ = try store.attachPhoto(attach, now: 2)
        }
        // Detached again before the delete: it is not the doomed item's any more.
        var detach = DetachPhotoRequest()
        detach.itemKey = doomed.key
        detach.imageKey = later
        _ = try store.detachPhoto(detach, now: 3)
        _ = try store.delete(key: doomed.key, now: 4)
        let pending = try owedCascades(store)
        #expect(pending.map(\.ownerKey) == [doomed.key] && pending.first?.attachedKeys == [only])

        var attach = AttachPhotoRequest()
        attach.itemKey = other.key
        attach.imageKey = only
        guard case let .failedPrecondition(message)? = storeError({ try store.attachPhoto(attach, now: 5) }) else {
            Issue.record("a photo on its way out with its item was attached to another"); return
        }
        #expect(message.contains(only) && message.contains(doomed.key))
        #expect(storeError { try store.photoToCheck(attach) } != nil)
        attach.imageKey = later
        #expect(try store.photoToCheck(attach).map { $0.imageKey } == later)
        #expect(try store.attachPhoto(attach, now: 5).photoKeys == [shared, later])
    }

    @Test func detachEverywhereLetsEveryItemGoOfTheImagesAsDetachPhotoWould() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let first = try store.create(createRequest("First"), now: 1).item
        let second = try store.create(createRequest("Second"), now: 1).item
        let untouched = try store.create(createRequest("Untouched"), now: 1).item
        let (gone, kept) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        for (item, image) in [(first, gone), (first, kept), (second, kept), (second, gone), (untouched, kept)] {
            var attach = AttachPhotoRequest()
            attach.itemKey = item.key
            attach.imageKey = image
            _ = try store.attachPhoto(attach, now: 2)
        }
        let changed = try store.detachEverywhere([gone, UUID().uuidString.lowercased()], now: 3)
        #expect(Set(changed.map(\.key)) == [first.key, second.key])
        let (a, b, c) = (try store.get(key: first.key), try store.get(key: second.key), try store.get(key: untouched.key))
        #expect(a.photoKeys == [kept] && a.primaryPhotoKey == kept && a.version == 4 && a.updatedAtMs == 3)
        #expect(b.photoKeys == [kept] && b.primaryPhotoKey == kept && b.version == 4)
        #expect(c.photoKeys == [kept] && c.version == 2)
        #expect(changed.sorted { $0.key < $1.key } == [a, b].sorted { $0.key < $1.key })
        #expect(try store.detachEverywhere([gone], now: 4).isEmpty)
    }

    @Test func upgradingFromSchema2IndexesThePhotosItemsAlreadyHold() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let (doomed, other) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let (a, b, c) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        do {
            let db = try Database(path: path)
            _ = try Migrator(Array(ItemStore.migrator.migrations.prefix(2))).migrate(db)
            for (position, (key, photos)) in [(doomed, "\(a) \(b) \(c)"), (other, b)].enumerated() {
                try db.execute(
                    "INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position, photo_keys, primary_photo_key) VALUES (?, 'x', '', 0, 1, 1, 1, ?, ?, ?)",
                    [.text(key), .integer(Int64(position)), .text(photos), .text(String(photos.prefix(36)))])
            }
            try db.close()
        }
        let store = try ItemStore(path: path)
        #expect(try store.db.userVersion == ItemStore.schemaVersion)
        #expect(try store.db.scalar("SELECT count(*) FROM item_photos")?.int64Value == 4)
        _ = try store.delete(key: doomed, now: 2)
        #expect(try owedCascades(store).first?.attachedKeys == [a, c])
        #expect(try store.db.scalar("SELECT count(*) FROM item_photos")?.int64Value == 1)
    }

    @Test func aDatabaseFromANewerBuildIsRefused() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        do {
            let db = try Database(path: path)
            try db.setUserVersion(ItemStore.schemaVersion + 1)
            try db.close()
        }
        #expect(throws: ItemStoreError.self) { try ItemStore(path: path) }
    }

    @Test func photosAttachDetachPrimaryAndReorder() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let item = try store.create(createRequest("Shiny Mac"), now: 1).item
        let images = (0..<3).map { _ in UUID().uuidString.lowercased() }
        var attach = AttachPhotoRequest()
        attach.itemKey = item.key
        var current = item
        for image in images {
            attach.imageKey = image
            current = try store.attachPhoto(attach, now: 2)
        }
        #expect(current.photoKeys == images && current.primaryPhotoKey == images[0] && current.version == 4)
        // Attaching again changes nothing.
        attach.imageKey = images[1]
        #expect(try store.attachPhoto(attach, now: 3).version == 4)

        var primary = SetPrimaryPhotoRequest()
        primary.itemKey = item.key
        primary.imageKey = images[2]
        #expect(try store.setPrimaryPhoto(primary, now: 4).primaryPhotoKey == images[2])
        primary.imageKey = UUID().uuidString
        guard case .failedPrecondition? = storeError({ try store.setPrimaryPhoto(primary, now: 4) }) else { Issue.record("accepted"); return }

        var reorder = ReorderPhotosRequest()
        reorder.itemKey = item.key
        reorder.imageKeys = [images[2], images[0]]
        guard case let .invalidArgument(missing)? = storeError({ try store.reorderPhotos(reorder, now: 5) }) else {
            Issue.record("a partial order was accepted"); return
        }
        #expect(missing.contains(images[1]))
        reorder.imageKeys = [images[2], images[0], images[1]]
        #expect(try store.reorderPhotos(reorder, now: 5).photoKeys == reorder.imageKeys)

        var detach = DetachPhotoRequest()
        detach.itemKey = item.key
        detach.imageKey = images[2]
        let detached = try store.detachPhoto(detach, now: 6)
        #expect(detached.photoKeys == [images[0], images[1]] && detached.primaryPhotoKey == images[0])
        guard case .notFound? = storeError({ try store.detachPhoto(detach, now: 7) }) else { Issue.record("detached twice"); return }
        #expect(try store.get(key: item.key) == detached)
    }

    @Test func aPhotoOfContentTheItemHoldsIsNotAttachedAndPhotosFromBeforeSchema6MatchNothing() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let (old, first, same, other) = (
            UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let item: String
        do {
            // A photo attached under schema 5, when no checksum was kept.
            let db = try oldDatabase(path, version: 5)
            item = UUID().uuidString.lowercased()
            try db.execute(
                """
                INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position, photo_keys, primary_photo_key)
                VALUES (?, 'Shiny Mac', '', 0, 1, 1, 1, 1, ?, ?)
                """, [.text(item), .text(old), .text(old)])
            try db.execute("INSERT INTO item_photos (image_key, item_id) SELECT ?, id FROM items WHERE key = ?", [.text(old), .text(item)])
            try db.close()
        }
        let store = try ItemStore(path: path)
        #expect(try store.db.userVersion == ItemStore.schemaVersion)
        var attach = AttachPhotoRequest()
        attach.itemKey = item
        attach.imageKey = first
        #expect(try store.attachPhoto(attach, checksum: "sha256:aa", now: 2).photoKeys == [old, first])
        // The same content under another key: nothing attached, no new version; make_primary
        // makes the photo holding it primary.
        attach.imageKey = same
        let unchanged = try store.attachPhoto(attach, checksum: "sha256:aa", now: 3)
        #expect(unchanged.photoKeys == [old, first] && unchanged.version == 2)
        attach.makePrimary = true
        #expect(try store.attachPhoto(attach, checksum: "sha256:aa", now: 4).primaryPhotoKey == first)
        // The photo from before has no checksum: nothing matches it; nor does an unknown one.
        attach.imageKey = other
        attach.makePrimary = false
        #expect(try store.attachPhoto(attach, checksum: "", now: 5).photoKeys == [old, first, other])
    }
}
