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

    /// Records `ownerKey` as deleted for good (a repeat keeps the first time); written in the
    /// transaction that deletes the owner's images (`ImageStore.deleteForOwner`).
    func recordDeletedOwner(_ ownerKey: String, now: Int64) throws {
        try db.execute(
            "INSERT OR IGNORE INTO deleted_owners (owner_key, deleted_at_ms) VALUES (?, ?)", [.text(ownerKey), .integer(now)])
    }

    /// The images of `ownerKey`, the images `attached` that belong to it or to no owner (keys
    /// with no image, or with an image of another owner, are skipped) and everything made from
    /// either: what the item delete's cascade removes.
    ///
    /// AttachPhoto admits only images of the item or of no owner, so an attached key whose
    /// image has another owner was deleted and stored again (keys may be reused) after the
    /// cascade named it: that image is someone else's, and stays.
    func deletion(ofOwner ownerKey: String, attached: [String]) throws -> [ImageInfo] {
        var rows = try deletion(ofOwner: ownerKey)
        var seen = Set(rows.map(\.key))
        for key in attached where !seen.contains(key) {
            guard let image = try get(key), image.ownerKey.isEmpty || image.ownerKey == ownerKey else { continue }
            for row in [image] + (try descendants(of: key)) where seen.insert(row.key).inserted { rows.append(row) }
        }
        return rows
    }
}
