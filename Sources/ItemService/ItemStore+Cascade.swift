import SQLite

/// One item delete whose images the image service has not confirmed deleting yet.
public struct PendingCascade: Sendable, Equatable {
    /// The outbox row.
    public var id: Int64
    /// The deleted item's key: the owner of the images to delete.
    public var ownerKey: String
    /// Delivery attempts that failed so far.
    public var attempts: Int64
}

extension ItemStore {
    /// The oldest pending cascades, at most `limit`.
    public func pendingCascades(limit: Int = 100) throws -> [PendingCascade] {
        try db.query("SELECT id, owner_key, attempts FROM cascade_outbox ORDER BY id LIMIT ?", [.integer(Int64(limit))]).map {
            PendingCascade(id: $0[0].int64Value!, ownerKey: $0[1].stringValue!, attempts: $0[2].int64Value!)
        }
    }

    /// Removes a delivered cascade.
    public func completeCascade(id: Int64) throws {
        try write { try db.execute("DELETE FROM cascade_outbox WHERE id = ?", [.integer(id)]) }
    }

    /// Counts a failed attempt and keeps its reason (shown by stats and logs).
    public func failCascade(id: Int64, error: String) throws {
        try write {
            try db.execute(
                "UPDATE cascade_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?",
                [.text(String(error.prefix(500))), .integer(id)])
        }
    }
}
