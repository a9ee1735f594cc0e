import Proto
import SQLite

/// The durable record of a chunked upload in progress: what BeginUpload declared and how many
/// bytes of its staging file are acknowledged.
struct UploadRow: Sendable {
    /// The upload's id (a lower-case UUID).
    var id: String
    /// What the image will be (owner, content type, kind, parent, key, media type).
    var new: NewImage
    /// The declared total size in bytes.
    var totalSize: Int64
    /// "sha256:<hex>" given at begin, or "".
    var checksum: String
    /// The bytes fsynced in the staging file and acknowledged.
    var receivedBytes: Int64
    /// When it is dropped unless used again.
    var expiresAtMs: Int64
}

/// The `uploads` table (migration 7): one row per open upload, written before each call on it
/// is answered.
extension ImageIndex {
    /// Adds the row of a new upload.
    func insertUpload(_ row: UploadRow) throws {
        try transactions.write {
            try db.execute(
                "INSERT INTO uploads (upload_id, owner_key, content_type, kind, parent_key, media_type, key, total_size, checksum, received_bytes, expires_at_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [.text(row.id), .text(row.new.ownerKey), .text(row.new.contentType), .integer(Int64(row.new.kind.rawValue)),
                 .text(row.new.parentKey), .integer(Int64(row.new.mediaType.rawValue)), .text(row.new.key),
                 .integer(row.totalSize), .text(row.checksum), .integer(row.receivedBytes), .integer(row.expiresAtMs)])
        }
    }

    /// Records the acknowledged bytes and the new expiry of upload `id`.
    func updateUpload(_ id: String, receivedBytes: Int64, expiresAtMs: Int64) throws {
        try transactions.write {
            try db.execute(
                "UPDATE uploads SET received_bytes = ?, expires_at_ms = ? WHERE upload_id = ?",
                [.integer(receivedBytes), .integer(expiresAtMs), .text(id)])
        }
    }

    /// Removes the rows of uploads that ended (committed, aborted, expired, or lost their file).
    func deleteUploads(_ ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try transactions.write {
            for id in ids { try db.execute("DELETE FROM uploads WHERE upload_id = ?", [.text(id)]) }
        }
    }

    /// Every open upload's row, oldest expiry first.
    func uploadRows() throws -> [UploadRow] {
        try db.query(
            "SELECT upload_id, owner_key, content_type, kind, parent_key, media_type, key, total_size, checksum, received_bytes, expires_at_ms FROM uploads ORDER BY expires_at_ms, upload_id"
        ).map { row in
            UploadRow(
                id: row[0].stringValue ?? "",
                new: NewImage(
                    ownerKey: row[1].stringValue ?? "", contentType: row[2].stringValue ?? "",
                    kind: ImageKind(rawValue: Int32(row[3].int64Value ?? 0)), parentKey: row[4].stringValue ?? "",
                    key: row[6].stringValue ?? "", mediaType: MediaType(rawValue: Int32(row[5].int64Value ?? 0))),
                totalSize: row[7].int64Value ?? 0, checksum: row[8].stringValue ?? "",
                receivedBytes: row[9].int64Value ?? 0, expiresAtMs: row[10].int64Value ?? 0)
        }
    }
}
