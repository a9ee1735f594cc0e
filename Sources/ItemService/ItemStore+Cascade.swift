import JobQueue
import Proto
import SQLite

extension ItemStore {
    /// Version 5: the deliveries still owed in the outbox of versions 1–4 become `cascade`
    /// jobs (due when their row was, in the order of the deletes), and the outbox goes, in one
    /// transaction with the version, so none is lost or delivered twice by the upgrade. What
    /// the rows kept of their failed attempts is not carried over (the backoff starts again).
    static func moveOutboxIntoJobs(_ db: Database, _ jobs: JobStore) throws {
        try db.inTransaction(.immediate) {
            // Read under the write lock, as the migrator does.
            guard try db.userVersion < outboxMovedVersion else { return }
            let rows = try db.query(
                "SELECT owner_key, attached_keys, created_at_ms, next_attempt_at_ms FROM cascade_outbox ORDER BY id")
            for row in rows {
                let owner = row[0].stringValue!, attached = row[1].stringValue ?? ""
                let createdAt = row[2].int64Value!
                _ = try jobs.enqueue(
                    queue: CascadeQueue.name,
                    payload: CascadeQueue.payload(
                        owner: owner, attached: attached.isEmpty ? [] : attached.split(separator: " ").map(String.init)),
                    dedupeKey: CascadeQueue.dedupeKey(owner), runAtMs: max(createdAt, row[3].int64Value!), now: createdAt)
            }
            try db.execute("DROP TABLE cascade_outbox")
            try db.setUserVersion(outboxMovedVersion)
        }
    }

    /// Detaches each of `imageKeys` from every item that has it (images about to be deleted
    /// with their owner, attached to other items before AttachPhoto checked owners), the way
    /// DetachPhoto does; returns the items as changed.
    public func detachEverywhere(_ imageKeys: [String], now: Int64) throws -> [Item] {
        try write {
            var changed: [String: Item] = [:]
            for imageKey in imageKeys {
                let holders = try db.query(
                    "SELECT items.key FROM item_photos JOIN items ON items.id = item_photos.item_id WHERE item_photos.image_key = ?",
                    [.text(imageKey)])
                for row in holders {
                    guard let itemKey = row[0].stringValue else { continue }
                    let before = try existing(key: itemKey)
                    var item = before
                    item.photoKeys.removeAll { $0 == imageKey }
                    item.photos.removeAll { $0.imageKey == imageKey }
                    if item.primaryPhotoKey == imageKey { item.primaryPhotoKey = item.photoKeys.first ?? "" }
                    changed[itemKey] = try savePhotos(item, before: before, now: now)
                }
            }
            return changed.values.sorted { $0.key < $1.key }
        }
    }
}
