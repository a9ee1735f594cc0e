import JPEG
import Proto

/// When the photos stored before images.db recorded it were taken (schema 9): their rows hold
/// NULL, read as "", until this backfill has read the head of their blob.
extension ImageStore {
    /// Bytes read from the head of a blob for its EXIF: a JPEG's Exif APP1 is one segment of at
    /// most 64 KiB, right after SOI (and a JFIF APP0) in every camera's file.
    static let takenAtHeadBytes = 128 << 10

    /// What a backfill did.
    struct TakenAtBackfillReport: Sendable, Equatable {
        /// Rows given their `taken_at` ("" for a JPEG without a valid DateTimeOriginal).
        var filled = 0
        /// Rows whose blob could not be read (missing, or the disk failed): they keep NULL,
        /// and the next start tries again.
        var unreadable = 0
    }

    /// Fills in `taken_at` of the rows stored before it was recorded (JPEGs only: migration 9
    /// gave every other row ""), `pageSize` rows at a time in stored order: an ORIGINAL's or
    /// EDITED image's from the EXIF in the first `takenAtHeadBytes` of its blob, read on a disk
    /// thread (as it is on disk: fsck checks blobs against their SHA-256); a THUMBNAIL's, and an
    /// edit's whose bytes hold no date, from its parent (as a new row gets it). Each page is one
    /// read on the reader, one turn of a disk thread and one write, so puts and reads go on
    /// meanwhile; a row whose key was stored again since is left as it is. Ends when no row is
    /// left (then it reads one empty page) or once `stopped` says so.
    func backfillTakenAt(
        pageSize: Int = 64, stopped: @escaping @Sendable () -> Bool = { false }
    ) async throws -> TakenAtBackfillReport {
        var report = TakenAtBackfillReport()
        var after: Int64 = 0
        let blobs = blobs
        while !stopped() {
            let from = after
            let page = try await indexRead { try $0.undatedRows(after: from, limit: pageSize) }
            guard let last = page.last else { break }
            after = last.seq
            let read = try await onLane { () -> [(row: ImageIndex.UndatedRow, takenAt: String?)] in
                var read: [(row: ImageIndex.UndatedRow, takenAt: String?)] = []
                for row in page {
                    if stopped() { break }
                    read.append((row, row.kind == .thumbnail ? "" : Self.takenAt(ofBlob: row, blobs: blobs)))
                }
                return read
            }
            report.unreadable += read.filter { $0.takenAt == nil }.count
            let found = read.compactMap { row, takenAt in takenAt.map { (row: row, takenAt: $0) } }
            if !found.isEmpty { report.filled += try await indexWrite { try $0.setTakenAt(found) } }
        }
        return report
    }

    /// The `taken_at` of a stored JPEG's bytes ("" without a valid DateTimeOriginal); nil when
    /// its blob cannot be read.
    static func takenAt(ofBlob row: ImageIndex.UndatedRow, blobs: BlobStore) -> String? {
        guard let head = try? blobs.head(key: row.key, size: row.sizeBytes, count: takenAtHeadBytes) else { return nil }
        return EXIF.takenAt(in: head) ?? ""
    }
}
