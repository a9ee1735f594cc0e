import Digest
import Foundation
import Proto
import RPC
import RPCTestSupport
import SQLite
import Testing

@testable import ItemService

/// The tamper-evident history on a real items.db: every change appended in its own
/// transaction, a chain whose every entry hashes its predecessor, and VerifyHistory finding
/// edits made to the file directly.
@Suite struct HistoryTests {
    /// Every entry, oldest first, through GetHistory's pages.
    func allEntries(_ store: ItemStore, subject: String = "") throws -> [HistoryEntry] {
        var request = GetHistoryRequest()
        request.subjectKey = subject
        request.pageSize = 3
        var entries: [HistoryEntry] = []
        repeat {
            let page = try store.history(request)
            entries += page.entries
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return entries
    }

    @Test func everyChangeIsAppendedToAChainWhoseEntriesHashTheirPredecessors() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        defer { try? store.close() }
        let garage = try store.createLocation(locationRequest("Garage"), now: 1)
        let tools = try store.createCategory(categoryRequest("Tools", years: 10, floor: 10), now: 2)
        var create = createRequest("Drill", serial: "DR-1")
        create.locationKey = garage.key
        let drill = try store.acting(as: "alice") { try store.create(create, now: 3).item }
        _ = try store.create(createRequest("Saw"), now: 4)
        var update = UpdateItemRequest()
        update.key = drill.key
        update.categoryKey = tools.key
        update.updateMask = ["category_key"]
        _ = try store.update(update, now: 5)
        let photo = UUID().uuidString.lowercased()
        var attach = AttachPhotoRequest()
        attach.itemKey = drill.key
        attach.imageKey = photo
        let checksum = "sha256:" + String(repeating: "ab", count: 32)
        _ = try store.attachPhoto(attach, checksum: checksum, now: 6)
        var role = SetPhotoRoleRequest()
        role.itemKey = drill.key
        role.imageKey = photo
        role.role = .receipt
        _ = try store.setPhotoRole(role, now: 7)
        try store.move(from: 1, to: 0, now: 8)
        var detach = DetachPhotoRequest()
        detach.itemKey = drill.key
        detach.imageKey = photo
        _ = try store.detachPhoto(detach, now: 9)
        var policy = UpdatePolicyRequest()
        policy.policy = Policy()
        policy.policy!.insurer = "Acme Mutual"
        policy.updateMask = ["insurer"]
        _ = try store.updatePolicy(policy, now: 10)
        _ = try store.delete(key: drill.key, now: 11)

        let entries = try allEntries(store)
        #expect(entries.map(\.action) == [
            "location.created", "category.created", "item.created", "item.created", "item.updated", "photo.attached", "photo.role",
            "item.moved", "photo.detached", "policy.updated", "item.deleted",
        ])
        #expect(entries.map(\.seq) == Array(1...Int64(entries.count)))
        #expect(entries.map(\.atMs) == Array(1...11))
        #expect(entries.map(\.actor) == ["local", "local", "alice", "local", "local", "local", "local", "local", "local", "local", "local"])
        var previous = ""
        for entry in entries {
            #expect(entry.previousHash == previous)
            var unhashed = entry
            unhashed.hash = ""
            #expect(SHA256.checksum(unhashed.serializedBytes()) == entry.hash)
            previous = entry.hash
        }
        // What each records: the subject after the change (a delete: as it was).
        #expect(entries[2].item?.name == "Drill" && entries[2].item?.locationKey == garage.key)
        #expect(entries[4].item?.categoryKey == tools.key && entries[4].item?.version == 2)
        #expect(entries[5].photoKey == photo && entries[5].photoChecksum == checksum && entries[5].item?.photoKeys == [photo])
        #expect(entries[6].item?.photos.first?.role == .receipt)
        #expect(entries[7].subjectKey == "\(try store.list(ListItemsRequest()).items.first { $0.name == "Saw" }!.key)")
        #expect((entries[7].fromIndex, entries[7].toIndex) == (1, 0))
        #expect(entries[9].policy?.insurer == "Acme Mutual" && entries[9].subjectKey.isEmpty)
        #expect(entries[10].item?.key == drill.key && entries[10].item?.photoKeys == [])
        // A location is recorded by its own fields, not its counts or path.
        #expect(entries[0].location?.name == "Garage" && entries[0].location?.path == "" && entries[0].location?.itemCount == 0)
        // One subject's entries.
        #expect(try allEntries(store, subject: drill.key).map(\.action) == [
            "item.created", "item.updated", "photo.attached", "photo.role", "photo.detached", "item.deleted",
        ])
        let verified = try store.verifyHistory()
        #expect(verified.intact && verified.entriesChecked == 11 && verified.unrecorded.isEmpty)
        #expect(verified.head?.seq == 11 && verified.head?.hash == entries.last?.hash)
    }

    @Test func aChangeThatFailsLeavesNoEntryAndARepeatAddsNone() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        defer { try? store.close() }
        var create = createRequest("Lamp")
        create.key = UUID().uuidString.lowercased()
        _ = try store.create(create, now: 1)
        _ = try store.create(create, now: 2)  // a repeat: nothing new
        var update = UpdateItemRequest()
        update.key = create.key
        update.name = "Lamp"
        update.expectedVersion = 7  // stale: refused, so nothing is recorded
        update.updateMask = ["name"]
        #expect(storeError { try store.update(update, now: 3) }?.rpcStatus == .aborted)
        #expect(storeError { try store.deleteLocation(key: UUID().uuidString.lowercased(), now: 4) }?.rpcStatus == .notFound)
        #expect(try allEntries(store).map(\.action) == ["item.created"])
        #expect(try store.verifyHistory().intact)
    }

    @Test func anEntryEditedRemovedOrRehashedInSQLiteBreaksTheChainThere() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        for name in ["Chair", "Table", "Sofa", "Rug"] { _ = try store.create(createRequest(name), now: 1) }
        try store.close()

        // The second entry's item renamed, its hash left: the content no longer hashes to it.
        let db = try Database(path: path)
        defer { try? db.close() }
        let bytes = try #require(try db.scalar("SELECT entry FROM history WHERE seq = 2")?.blobValue)
        let originalHash = try #require(try db.scalar("SELECT hash FROM history WHERE seq = 2")?.stringValue)
        var forged = try HistoryEntry(serializedBytes: bytes)
        forged.item?.name = "Antique table"
        try db.execute("UPDATE history SET entry = ? WHERE seq = 2", [.blob(forged.serializedBytes())])
        var verified = try reopenedAndVerified(path)
        #expect(!verified.intact && verified.firstBreakSeq == 2)
        #expect(verified.problem.contains("entry 2 was changed after it was written"))

        // Its hash recomputed too: now the next entry's link gives it away.
        try db.execute("UPDATE history SET hash = ? WHERE seq = 2", [.text(SHA256.checksum(forged.serializedBytes()))])
        verified = try reopenedAndVerified(path)
        #expect(!verified.intact && verified.firstBreakSeq == 3)
        #expect(verified.problem.hasPrefix("entry 3 links to"))

        // Put back as it was, then an entry removed: the gap is named.
        try db.execute("UPDATE history SET entry = ?, hash = ? WHERE seq = 2", [.blob(bytes), .text(originalHash)])
        #expect(try reopenedAndVerified(path).intact)
        try db.execute("DELETE FROM history WHERE seq = 3")
        verified = try reopenedAndVerified(path)
        #expect(!verified.intact && verified.firstBreakSeq == 4)
        #expect(verified.problem == "entry 3 is missing (the chain goes from 2 to 4)")
    }

    @Test func rowsChangedBehindTheHistorysBackAreListed() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        let chair = try store.create(createRequest("Chair", serial: "C-1"), now: 1).item
        let table = try store.create(createRequest("Table"), now: 2).item
        _ = try store.createLocation(locationRequest("Attic"), now: 3)
        try store.close()

        let db = try Database(path: path)
        defer { try? db.close() }
        try db.execute("UPDATE items SET serial_number = 'C-2' WHERE key = ?", [.text(chair.key)])
        try db.execute("DELETE FROM items WHERE key = ?", [.text(table.key)])
        try db.execute(
            "INSERT INTO locations (key, name, parent_key, kind, notes, created_at_ms, updated_at_ms, version) VALUES (?, 'Cellar', '', 3, '', 4, 4, 1)",
            [.text(UUID().uuidString.lowercased())])
        let verified = try reopenedAndVerified(path)
        #expect(verified.firstBreakSeq == 0)  // the chain itself holds
        #expect(!verified.intact && verified.unrecordedCount == 3)
        #expect(verified.unrecorded.contains("item \(chair.key): serialNumber changed since its last entry, item.created (entry 1)"))
        #expect(verified.unrecorded.contains("item \(table.key): gone, but its last entry is item.created (entry 2), not a delete"))
        #expect(verified.unrecorded.contains { $0.hasPrefix("location ") && $0.hasSuffix(": exists, but no history entry records it") })
    }

    @Test func aFileFromBeforeTheHistoryIsRecordedAsFoundAtItsFirstOpen() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        let attic = try store.createLocation(locationRequest("Attic"), now: 1)
        var create = createRequest("Trunk")
        create.locationKey = attic.key
        _ = try store.create(create, now: 2)
        _ = try store.create(createRequest("Kite"), now: 3)
        try store.close()
        // As a file of schema 7 would be: no history, and the migration's mark.
        let db = try Database(path: path)
        try db.execute("DELETE FROM history")
        try db.execute("INSERT INTO history_pending (what) VALUES ('upgrade')")
        try db.close()

        let reopened = try ItemStore(path: path)
        defer { try? reopened.close() }
        let entries = try allEntries(reopened)
        #expect(entries.map(\.action) == ["location.recorded", "item.recorded", "item.recorded"])
        #expect(entries.allSatisfy { $0.actor == "upgrade" })
        #expect(entries.map { $0.item?.name ?? $0.location?.name ?? "" } == ["Attic", "Trunk", "Kite"])
        #expect(try reopened.verifyHistory().intact)
        #expect(try reopened.db.scalar("SELECT count(*) FROM history_pending")?.int64Value == 0)
    }

    /// VerifyHistory after closing the file's writer and opening it again, as a service would.
    private func reopenedAndVerified(_ path: String) throws -> VerifyHistoryResponse {
        let reader = try ItemReader(path: path)
        defer { try? reader.close() }
        return try reader.verifyHistory()
    }
}
