import Proto
import SQLite

/// The rows of images stored before images.db recorded when a photo was taken (schema 9 added
/// `taken_at`): their `taken_at` is NULL until the store's backfill has read the head of their
/// blob (`ImageStore.backfillTakenAt`). Every row stored since has it ("" for none).
extension ImageIndex {
    /// A row whose `taken_at` is not known yet: what the backfill reads and writes.
    struct UndatedRow: Sendable, Equatable {
        /// Its place in stored order: a parent comes before what was made from it.
        var seq: Int64
        var key: String
        var kind: ImageKind
        var parentKey: String
        var sizeBytes: Int64
        /// Its content: a key stored again meanwhile (a new row, dated) is left alone.
        var checksum: String
    }

    /// Up to `limit` rows after `seq` whose `taken_at` is NULL, in stored order.
    func undatedRows(after seq: Int64, limit: Int) throws -> [UndatedRow] {
        try db.query(
            "SELECT seq, key, kind, parent_key, size_bytes, checksum FROM images WHERE taken_at IS NULL AND seq > ? ORDER BY seq LIMIT ?",
            [.integer(seq), .integer(Int64(limit))]
        ).map { row in
            UndatedRow(
                seq: row[0].int64Value ?? 0, key: row[1].stringValue ?? "", kind: ImageKind(rawValue: Int32(row[2].int64Value ?? 0)),
                parentKey: row[3].stringValue ?? "", sizeBytes: row[4].int64Value ?? 0, checksum: row[5].stringValue ?? "")
        }
    }

    /// Sets `taken_at` of rows still NULL, in one write, in the order given: each to what its
    /// own bytes hold (`found`), or, for an EDITED or THUMBNAIL image whose bytes hold none, to
    /// its parent's (as `insertRow` does for a new row). A derived row whose parent is not
    /// dated yet (its blob could not be read) stays NULL, for a later pass. Returns how many
    /// rows were set.
    func setTakenAt(_ found: [(row: UndatedRow, takenAt: String)]) throws -> Int {
        try transactions.write {
            var set = 0
            for (row, own) in found {
                var takenAt = own
                if takenAt.isEmpty, !row.parentKey.isEmpty {
                    guard let parents = try db.scalar("SELECT taken_at FROM images WHERE key = ?", [.text(row.parentKey)])?.stringValue
                    else { continue }
                    takenAt = parents
                }
                try db.execute(
                    "UPDATE images SET taken_at = ? WHERE key = ? AND checksum = ? AND taken_at IS NULL",
                    [.text(takenAt), .text(row.key), .text(row.checksum)])
                set += db.changes
            }
            return set
        }
    }
}
