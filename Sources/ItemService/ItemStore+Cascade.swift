import Proto
import SQLite

/// One item delete whose images the image service has not confirmed deleting yet.
public struct PendingCascade: Sendable, Equatable {
    /// The outbox row.
    public var id: Int64
    /// The deleted item's key: the owner of the images to delete.
    public var ownerKey: String
    /// Photos attached to the item and to no other item when it was deleted: deleted with it,
    /// whoever owns them.
    public var attachedKeys: [String]
    /// Delivery attempts that failed so far.
    public var attempts: Int64
    /// When the row falls due (wall clock, ms since the epoch; 0: at once).
    public var nextAttemptAtMs: Int64
}

extension ItemStore {
    /// The pending cascades due at `now`, the earliest due first, at most `limit`: rows that
    /// keep failing fall behind the others instead of blocking them. A row due more than
    /// `maxDelayMilliseconds` after `now` counts as due too: no backoff is that long, so the
    /// wall clock went back, and the row must not wait for it to catch up.
    public func dueCascades(now: Int64, maxDelayMilliseconds: Int64, limit: Int = 100) throws -> [PendingCascade] {
        try db.query(
            """
            SELECT id, owner_key, attached_keys, attempts, next_attempt_at_ms FROM cascade_outbox
            WHERE next_attempt_at_ms <= ? OR next_attempt_at_ms > ?
            ORDER BY next_attempt_at_ms, id LIMIT ?
            """,
            [.integer(now), .integer(now + maxDelayMilliseconds), .integer(Int64(limit))]
        ).map(Self.pendingCascade(from:))
    }

    /// Every pending cascade in the order of the deletes, at most `limit`.
    public func pendingCascades(limit: Int = 100) throws -> [PendingCascade] {
        try db.query(
            "SELECT id, owner_key, attached_keys, attempts, next_attempt_at_ms FROM cascade_outbox ORDER BY id LIMIT ?",
            [.integer(Int64(limit))]
        ).map(Self.pendingCascade(from:))
    }

    /// When the next pending cascade falls due; nil when none is pending.
    public func nextCascadeDue() throws -> Int64? {
        try db.scalar("SELECT min(next_attempt_at_ms) FROM cascade_outbox")?.int64Value
    }

    /// Removes a delivered cascade.
    public func completeCascade(id: Int64) throws {
        try write { try db.execute("DELETE FROM cascade_outbox WHERE id = ?", [.integer(id)]) }
    }

    /// Counts a failed attempt, keeps its reason (shown by logs) and when to try again.
    public func failCascade(id: Int64, error: String, retryAt: Int64) throws {
        try write {
            try db.execute(
                "UPDATE cascade_outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at_ms = ? WHERE id = ?",
                [.text(String(error.prefix(500))), .integer(retryAt), .integer(id)])
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
                    if item.primaryPhotoKey == imageKey { item.primaryPhotoKey = item.photoKeys.first ?? "" }
                    changed[itemKey] = try savePhotos(item, before: before, now: now)
                }
            }
            return changed.values.sorted { $0.key < $1.key }
        }
    }

    static func pendingCascade(from row: Row) -> PendingCascade {
        let attached = row[2].stringValue ?? ""
        return PendingCascade(
            id: row[0].int64Value!, ownerKey: row[1].stringValue!,
            attachedKeys: attached.isEmpty ? [] : attached.split(separator: " ").map(String.init),
            attempts: row[3].int64Value!, nextAttemptAtMs: row[4].int64Value!)
    }
}
