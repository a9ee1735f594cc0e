import Proto
import SQLite

/// Owners deleted for good: the item delete cascade's side in images.db.
///
/// The record and the deletion of the owner's images commit together, and every new row is
/// checked against the record in the transaction that adds it (`insert`), on the same writer
/// connection: a put or upload of the owner commits either before the cascade (and is deleted
/// by it) or after (and is refused), whatever the order the calls arrive in.
extension ImageIndex {
    /// Throws FAILED_PRECONDITION when `ownerKey` was deleted for good.
    func refuseDeletedOwner(_ ownerKey: String) throws {
        guard !ownerKey.isEmpty,
              let deletedAt = try db.scalar(
                "SELECT deleted_at_ms FROM deleted_owners WHERE owner_key = ?", [.text(ownerKey)])?.int64Value
        else { return }
        throw ImageStoreError.failedPrecondition(
            "owner_key \(ownerKey) was deleted at \(deletedAt) ms (item \(ownerKey) was deleted, and its images with it); store the image for an owner that exists")
    }

    /// Deletes the images of `ownerKey`, the images `attached` (whoever owns them) and
    /// everything made from either, in one transaction; with `ownerDeleted`, records the owner
    /// as gone in the same transaction. Keys with no image are skipped.
    ///
    /// - Returns: The rows removed.
    func deleteForOwner(_ ownerKey: String, attached: [String], ownerDeleted: Bool, now: Int64) throws -> [ImageInfo] {
        try db.inTransaction {
            if ownerDeleted {
                try db.execute(
                    "INSERT OR IGNORE INTO deleted_owners (owner_key, deleted_at_ms) VALUES (?, ?)",
                    [.text(ownerKey), .integer(now)])
            }
            let owned = try db.query("SELECT key FROM images WHERE owner_key = ? ORDER BY seq", [.text(ownerKey)])
                .compactMap { $0[0].stringValue }
            var removed: [ImageInfo] = []
            var seen = Set<String>()
            for key in owned + attached {
                guard !seen.contains(key), let image = try get(key) else { continue }
                for row in [image] + (try descendants(of: key)) where seen.insert(row.key).inserted {
                    removed.append(row)
                }
            }
            for image in removed { try db.execute("DELETE FROM images WHERE key = ?", [.text(image.key)]) }
            return removed
        }
    }
}
