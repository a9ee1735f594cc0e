import Foundation
import Proto
import RPC
import SQLite

/// Recording every change in the tamper-evident history (`HistoryChain`), inside the change's
/// own transaction. What is recorded is the subject as a read right after the change sees it,
/// without what is derived from other rows (a location's path and counts, a category's item
/// count), so VerifyHistory can compare it with what the tables hold later.
extension ItemStore {
    /// Runs `body` with `actor` as the author of the changes it records (its caller's key
    /// name), on the store's thread.
    public func acting<T>(as actor: String, _ body: () throws -> T) rethrows -> T {
        let saved = self.actor
        self.actor = actor
        defer { self.actor = saved }
        return try body()
    }

    /// Records a change to the item with `key` as the transaction has it now (call it before
    /// the row goes, for a delete). `item`: the caller's read of its row in this transaction,
    /// when it has one (no second read); else it is read here.
    func recordItem(
        _ action: String, key: String, now: Int64, as item: Item? = nil, photo: String = "", checksum: String = "",
        move: (from: Int32, to: Int32)? = nil
    ) throws {
        var entry = newEntry(action, subject: key, now: now)
        entry.item = try item ?? existing(key: key)
        entry.photoKey = photo
        entry.photoChecksum = checksum
        if let move {
            entry.fromIndex = move.from
            entry.toIndex = move.to
        }
        try HistoryChain.append(entry, to: db)
    }

    /// Records a change to the location with `key` (its stored fields; before the row goes,
    /// for a delete).
    func recordLocation(_ action: String, key: String, now: Int64) throws {
        var entry = newEntry(action, subject: key, now: now)
        entry.location = try storedLocation(key)
        try HistoryChain.append(entry, to: db)
    }

    /// Records a change to the category with `key` (before the row goes, for a delete).
    func recordCategory(_ action: String, key: String, now: Int64) throws {
        var entry = newEntry(action, subject: key, now: now)
        entry.category = try storedCategory(key)
        try HistoryChain.append(entry, to: db)
    }

    /// Records the policy as it is now.
    func recordPolicy(_ action: String = "policy.updated", now: Int64) throws {
        var entry = newEntry(action, subject: "", now: now)
        entry.policy = try policy()
        try HistoryChain.append(entry, to: db)
    }

    /// The first time a build that keeps a history opens a file that held data before (the
    /// schema 8 migration leaves a mark): records every location, category, the policy and
    /// every item as found, by the actor "upgrade", in one transaction with removing the mark.
    func recordUpgradeIfPending(now: Int64) throws {
        guard try db.scalar("SELECT 1 FROM history_pending WHERE what = 'upgrade'") != nil else { return }
        try db.inTransaction(.immediate) {
            try acting(as: HistoryChain.upgradeActor) {
                for location in try locationTree().ordered {
                    try recordLocation("location.recorded", key: location.key, now: now)
                }
                for category in try categories(counted: false) {
                    try recordCategory("category.recorded", key: category.key, now: now)
                }
                if try policy().version > 0 { try recordPolicy("policy.recorded", now: now) }
                let keys = try db.query("SELECT key FROM items ORDER BY id").compactMap { $0[0].stringValue }
                for key in keys { try recordItem("item.recorded", key: key, now: now) }
            }
            try db.execute("DELETE FROM history_pending WHERE what = 'upgrade'")
        }
    }

    /// What a photo change did, from the item before and after it.
    static func photoAction(before: Item, after: Item) -> String {
        if after.photoKeys.count > before.photoKeys.count { return "photo.attached" }
        if after.photoKeys.count < before.photoKeys.count { return "photo.detached" }
        if after.photoKeys != before.photoKeys { return "photo.reordered" }
        if after.primaryPhotoKey != before.primaryPhotoKey { return "photo.primary" }
        return "photo.role"
    }

    private func newEntry(_ action: String, subject: String, now: Int64) -> HistoryEntry {
        var entry = HistoryEntry()
        entry.atMs = now
        entry.actor = actor
        entry.action = action
        entry.subjectKey = subject
        if let importing, action.hasSuffix(".created") {
            entry.action = String(action.dropLast("created".count)) + "imported"
            entry.importSource = importing
        }
        return entry
    }
}

extension ItemReads {
    /// The location's stored fields (no path, depth or counts), or NOT_FOUND.
    func storedLocation(_ key: String) throws -> Location {
        guard let row = try db.query("SELECT \(ItemStore.locationColumns) FROM locations WHERE key = ?", [.text(key)]).first else {
            throw ItemStoreError.notFound("no location with key \(key)")
        }
        return ItemStore.location(from: row)
    }

    /// The category's stored fields (no item count), or NOT_FOUND.
    func storedCategory(_ key: String) throws -> Category {
        guard let row = try db.query("SELECT \(ItemStore.categoryColumns) FROM categories WHERE key = ?", [.text(key)]).first else {
            throw ItemStoreError.notFound("no category with key \(key)")
        }
        return ItemStore.category(from: row)
    }
}

extension RPCContext {
    /// Who a change is recorded as made by: the CURVE key's name (its public key when it has
    /// none), or "local" without keys.
    var historyActor: String {
        guard let caller else { return HistoryChain.localActor }
        return caller.name ?? caller.publicKey
    }
}
