import Proto
import JobQueue
import SQLite

/// The filter and page of a `ListImages` call.
struct ImageQuery: Sendable {
    var ownerKey = ""
    var kind: ImageKind = .unspecified
    var mediaType: MediaType = .unspecified
    /// Only rows after this sequence number (the page token).
    var afterSequence: Int64 = 0
    var limit = 100
}

/// An index row: the public metadata and the check its bytes are verified against on reads.
public struct StoredImage: Sendable, Equatable {
    /// The public metadata.
    public var info: ImageInfo
    /// "xxh64:<hex>", or "" for rows written before it existed (then `info.checksum` is verified).
    var contentCheck: String
    /// The digest of each block, which reads verify; empty for rows that have none yet.
    var blockChecks = BlockChecks()

    /// What a read verifies the blob against.
    var verification: String { contentCheck.isEmpty ? info.checksum : contentCheck }

    /// The cache key of its bytes: the image key (so deletes drop it by prefix) and its content,
    /// so a read finishing after a delete can never serve old bytes for a re-used key.
    var cacheKey: String { "\(info.key)@\(verification)" }
}

/// images.db: one row per blob. Not Sendable: `ImageStore` owns it on one serial queue.
final class ImageIndex: JobStoreHost, WriteTransactionsStore {
    let db: Database
    /// Its writes, alone or in the writer owner's group commit.
    let transactions: WriteTransactions
    /// The `thumbnails` queue, in the same file: a JPEG's job commits with its row.
    let jobs: JobStore
    /// The sizes each stored JPEG's job asks for; empty: no thumbnails are made on their own.
    let thumbnailSizes: [Int]

    static let migrator = Migrator([
        (1, """
            CREATE TABLE images (
              seq INTEGER PRIMARY KEY AUTOINCREMENT,
              key TEXT NOT NULL UNIQUE,
              owner_key TEXT NOT NULL,
              kind INTEGER NOT NULL,
              parent_key TEXT NOT NULL,
              media_type INTEGER NOT NULL,
              content_type TEXT NOT NULL,
              size_bytes INTEGER NOT NULL,
              width INTEGER NOT NULL,
              height INTEGER NOT NULL,
              orientation INTEGER NOT NULL,
              checksum TEXT NOT NULL,
              created_at_ms INTEGER NOT NULL
            );
            CREATE INDEX images_owner ON images(owner_key, seq);
            CREATE INDEX images_parent ON images(parent_key);
            """),
        // The fast content check verified on reads ("" for rows from version 1: SHA-256 is used).
        (2, "ALTER TABLE images ADD COLUMN content_check TEXT NOT NULL DEFAULT ''"),
        // Owners gone for good (deleted items): no image is stored for them again (ImageIndex+Owners).
        (3, """
            CREATE TABLE deleted_owners (
              owner_key TEXT PRIMARY KEY,
              deleted_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            """),
        // The XXH64 of each 1 MiB block (`BlockChecks`); empty for older rows until a read fills it.
        (4, "ALTER TABLE images ADD COLUMN block_checks BLOB NOT NULL DEFAULT x''"),
        // Owner keys that are UUIDs, in their canonical lower-case form (`ImageStore.canonicalOwner`),
        // as every version from this one stores them; a retired owner spelt both ways keeps the
        // earlier time.
        (5, """
            UPDATE images SET owner_key = lower(owner_key)
              WHERE owner_key GLOB '\(uuidPattern)' AND owner_key <> lower(owner_key);
            INSERT OR REPLACE INTO deleted_owners (owner_key, deleted_at_ms)
              SELECT lower(owner_key), min(deleted_at_ms) FROM deleted_owners
              WHERE owner_key GLOB '\(uuidPattern)' GROUP BY lower(owner_key);
            DELETE FROM deleted_owners WHERE owner_key GLOB '\(uuidPattern)' AND owner_key <> lower(owner_key);
            """),
        // The size (longest edge asked for) a THUMBNAIL was made at, which EnqueueThumbnails'
        // missing_only looks for; 0 for other kinds. A thumbnail put by a client counts as the
        // size of its longest edge.
        (6, """
            ALTER TABLE images ADD COLUMN thumbnail_size INTEGER NOT NULL DEFAULT 0;
            UPDATE images SET thumbnail_size = max(width, height) WHERE kind = \(ImageKind.thumbnail.rawValue);
            CREATE INDEX images_thumbnails ON images(parent_key, thumbnail_size) WHERE kind = \(ImageKind.thumbnail.rawValue);
            """),
        // Chunked uploads in progress, so they survive a restart (ImageIndex+Uploads); their
        // bytes are in `uploads/<id>.part`.
        (7, """
            CREATE TABLE uploads (
              upload_id TEXT PRIMARY KEY,
              owner_key TEXT NOT NULL,
              content_type TEXT NOT NULL,
              kind INTEGER NOT NULL,
              parent_key TEXT NOT NULL,
              media_type INTEGER NOT NULL,
              key TEXT NOT NULL,
              total_size INTEGER NOT NULL,
              checksum TEXT NOT NULL,
              received_bytes INTEGER NOT NULL,
              expires_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            """),
        // Thumbnail jobs name the generation of their image (`ThumbnailJob.image_generation`,
        // the row's seq) in their payload and dedupe key: those queued or dead from before get
        // their image's current one (a job whose image is gone keeps 0, and stores nothing).
        (8, """
            UPDATE jobs SET
              payload = \(withGenerationFunction)(payload, (SELECT seq FROM images WHERE key = substr(jobs.dedupe_key, 7, 36))),
              dedupe_key = 'image:' || substr(dedupe_key, 7, 36) || '@'
                || (SELECT seq FROM images WHERE key = substr(jobs.dedupe_key, 7, 36)) || substr(dedupe_key, 43)
            WHERE queue = '\(ThumbnailQueue.name)' AND state IN (1, 2, 4) AND dedupe_key GLOB 'image:*:*'
              AND EXISTS (SELECT 1 FROM images WHERE key = substr(jobs.dedupe_key, 7, 36));
            """),
        // When a photo was taken (`ImageInfo.taken_at`, from its EXIF), written with every new
        // row ("" for none). NULL marks a JPEG row stored before it was recorded, until the
        // store's backfill reads its blob's head (ImageIndex+TakenAt); nothing else has one.
        (9, """
            ALTER TABLE images ADD COLUMN taken_at TEXT;
            UPDATE images SET taken_at = '' WHERE content_type <> 'image/jpeg';
            """),
    ])

    /// The SQL function migration 8 sets a thumbnail job's generation with: (payload, generation)
    /// → the payload with it (a payload that does not decode is left as it is).
    private static let withGenerationFunction = "thumbnail_job_with_generation"

    /// A GLOB that matches a UUID in any case (what `UUID(uuidString:)` parses).
    private static let uuidPattern = "[0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f]"

    static let columns =
        "seq, key, owner_key, kind, parent_key, media_type, content_type, size_bytes, width, height, orientation, checksum, created_at_ms, content_check, block_checks, taken_at"

    /// The writer connection (creates and migrates the file), or with `readOnly` a reader
    /// connection beside it.
    init(
        path: String, readOnly: Bool = false, thumbnailSizes: [Int] = ThumbnailQueue.defaultSizes,
        thumbnailQueue: JobQueueConfiguration = ThumbnailQueue.configuration()
    ) throws {
        self.thumbnailSizes = thumbnailSizes
        if readOnly {
            db = try Database(path: path, mode: .readOnly)
            transactions = WriteTransactions(db)
            try db.setBusyTimeout(milliseconds: 5000)
            jobs = try JobStore(db: db, queues: [thumbnailQueue])
            return
        }
        db = try Database(path: path)
        transactions = WriteTransactions(db)
        // WAL lets readers run beside the writer; FULL makes each commit durable before a put is acknowledged.
        try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON")
        try db.setBusyTimeout(milliseconds: 5000)
        // The job tables first: a migration of the images rewrites thumbnail jobs.
        try JobStore.migrate(db)
        try db.createFunction(Self.withGenerationFunction, argumentCount: 2) { arguments in
            guard case .blob(let payload) = arguments[0], case .integer(let generation) = arguments[1],
                  var job = try? ThumbnailJob(serializedBytes: payload)
            else { return arguments[0] }
            job.imageGeneration = generation
            return .blob(job.serializedBytes())
        }
        _ = try Self.migrator.migrate(db)
        jobs = try JobStore(db: db, queues: [thumbnailQueue])
    }

    func close() throws { try db.close() }

    // MARK: Rows

    /// Adds the row of a new image, in a write of its own (a savepoint of the batch it runs in),
    /// and, for a JPEG original or edit, its thumbnail job in the same write: a crash leaves
    /// both or neither. Returns the row as written (see `insertRow`).
    @discardableResult
    func insert(_ info: ImageInfo, contentCheck: String, blockChecks: BlockChecks = BlockChecks()) throws -> ImageInfo {
        try transactions.write { try insertRow(info, contentCheck: contentCheck, blockChecks: blockChecks) }
    }

    /// `insert` inside a write already open; returns the row as written: `info`, with its
    /// parent's `taken_at` when it is an EDITED or THUMBNAIL image whose own bytes gave none
    /// (an edit or a thumbnail shows the photo it was made from; the parent's row is read here
    /// anyway, in the transaction that adds the child).
    ///
    /// - Parameter thumbnailSize: For a THUMBNAIL, the size it was made at; nil for its longest edge.
    @discardableResult
    func insertRow(_ info: ImageInfo, contentCheck: String, blockChecks: BlockChecks, thumbnailSize: Int? = nil) throws -> ImageInfo {
        try refuseDeletedOwner(info.ownerKey)
        var info = info
        if !info.parentKey.isEmpty {
            // The put checked its parent before writing; a delete of the parent since then (which
            // removes what was made from it in one transaction on this connection) must not leave
            // this child behind, pointing at nothing.
            guard let parent = try get(info.parentKey) else {
                throw ImageStoreError.notFound("parent_key \(info.parentKey): no such image (deleted while this image was being stored)")
            }
            if info.takenAt.isEmpty { info.takenAt = parent.takenAt }
        }
        try db.execute(
            "INSERT INTO images (key, owner_key, kind, parent_key, media_type, content_type, size_bytes, width, height, orientation, checksum, created_at_ms, content_check, block_checks, thumbnail_size, taken_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [.text(info.key), .text(info.ownerKey), .integer(Int64(info.kind.rawValue)), .text(info.parentKey),
             .integer(Int64(info.mediaType.rawValue)), .text(info.contentType), .integer(info.sizeBytes),
             .integer(Int64(info.width)), .integer(Int64(info.height)), .integer(Int64(info.orientation)),
             .text(info.checksum), .integer(info.createdAtMs), .text(contentCheck), .blob(blockChecks.encoded),
             .integer(info.kind == .thumbnail ? Int64(thumbnailSize ?? Int(max(info.width, info.height))) : 0),
             .text(info.takenAt)])
        if !thumbnailSizes.isEmpty && ThumbnailQueue.wants(info) {
            // The row's sequence number, never reused: the generation its job is for.
            let generation = db.lastInsertRowID
            _ = try jobs.enqueue(
                queue: ThumbnailQueue.name, payload: ThumbnailQueue.payload(info.key, generation: generation, sizes: thumbnailSizes),
                dedupeKey: ThumbnailQueue.dedupeKey(info.key, generation: generation, sizes: thumbnailSizes), now: info.createdAtMs)
        }
        return info
    }

    /// Replaces the row `lost` (whose blob file is gone) by `image`, of the same key, in one
    /// transaction; fails when `lost` is no longer the row of its key. Returns the new row as
    /// written (see `insertRow`).
    func replace(_ lost: StoredImage, with image: StoredImage) throws -> ImageInfo {
        try transactions.write {
            try db.execute(
                "DELETE FROM images WHERE key = ? AND checksum = ?", [.text(lost.info.key), .text(lost.info.checksum)])
            return try insertRow(image.info, contentCheck: image.contentCheck, blockChecks: image.blockChecks)
        }
    }

    /// Gives a row that has none its block checks, computed by a read that verified the whole
    /// blob; a row whose content changed since (deleted, stored again) is left alone.
    func setBlockChecks(_ checks: BlockChecks, of image: StoredImage) throws {
        try transactions.write {
            try db.execute(
                "UPDATE images SET block_checks = ? WHERE key = ? AND checksum = ? AND length(block_checks) = 0",
                [.blob(checks.encoded), .text(image.info.key), .text(image.info.checksum)])
        }
    }

    func get(_ key: String) throws -> ImageInfo? {
        try stored(key)?.info
    }

    /// The row with its content check.
    func stored(_ key: String) throws -> StoredImage? {
        try db.query("SELECT \(Self.columns) FROM images WHERE key = ?", [.text(key)]).first.map {
            StoredImage(
                info: Self.info($0).info, contentCheck: $0[13].stringValue ?? "",
                blockChecks: BlockChecks(encoded: $0[14].blobValue ?? []))
        }
    }

    /// A page in created order, and the sequence number of its last row.
    func list(_ query: ImageQuery) throws -> (images: [ImageInfo], last: Int64, more: Bool) {
        var sql = "SELECT \(Self.columns) FROM images WHERE seq > ?"
        var params: [SQLiteValue] = [.integer(query.afterSequence)]
        if !query.ownerKey.isEmpty { sql += " AND owner_key = ?"; params.append(.text(query.ownerKey)) }
        if query.kind != .unspecified { sql += " AND kind = ?"; params.append(.integer(Int64(query.kind.rawValue))) }
        if query.mediaType != .unspecified {
            sql += " AND media_type = ?"; params.append(.integer(Int64(query.mediaType.rawValue)))
        }
        sql += " ORDER BY seq LIMIT ?"
        params.append(.integer(Int64(query.limit + 1)))
        let rows = try db.query(sql, params).map(Self.info)
        let page = rows.prefix(query.limit)
        return (page.map(\.info), page.last?.seq ?? query.afterSequence, rows.count > query.limit)
    }

    /// The images made from `parentKey` (thumbnails, edits).
    func children(of parentKey: String) throws -> [ImageInfo] {
        try db.query("SELECT \(Self.columns) FROM images WHERE parent_key = ? ORDER BY seq", [.text(parentKey)])
            .map { Self.info($0).info }
    }

    /// Everything made from an image, at any depth (an EDITED image's THUMBNAIL too), parents first.
    func descendants(of key: String) throws -> [ImageInfo] {
        var found: [ImageInfo] = []
        var seen: Set<String> = [key]
        var frontier = [key]
        while let next = frontier.popLast() {
            for child in try children(of: next) where seen.insert(child.key).inserted {
                found.append(child)
                frontier.append(child.key)
            }
        }
        return found
    }

    /// An image and everything made from it (none when it does not exist): what deleting it removes.
    func deletion(of key: String) throws -> [ImageInfo] {
        guard let info = try get(key) else { return [] }
        return [info] + (try descendants(of: key))
    }

    /// Every image of an owner and what was made from them: what deleting the owner's images removes.
    func deletion(ofOwner ownerKey: String) throws -> [ImageInfo] {
        let owned = try db.query("SELECT \(Self.columns) FROM images WHERE owner_key = ? ORDER BY seq", [.text(ownerKey)])
            .map { Self.info($0).info }
        var removed: [ImageInfo] = []
        var seen = Set<String>()
        for image in owned {
            for row in [image] + (try descendants(of: image.key)) where seen.insert(row.key).inserted {
                removed.append(row)
            }
        }
        return removed
    }

    /// In one transaction, the rows `find` returns are deleted when every key among them is in
    /// `claimed` (and `alongside` is written with them); otherwise nothing is written and the
    /// keys outside `claimed` are returned.
    func delete(
        claimed: Set<String>, alongside: ((ImageIndex) throws -> Void)? = nil, _ find: (ImageIndex) throws -> [ImageInfo]
    ) throws -> (removed: [ImageInfo], unclaimed: Set<String>) {
        try transactions.write {
            let rows = try find(self)
            let unclaimed = Set(rows.map(\.key)).subtracting(claimed)
            guard unclaimed.isEmpty else { return ([], unclaimed) }
            try alongside?(self)
            for image in rows { try db.execute("DELETE FROM images WHERE key = ?", [.text(image.key)]) }
            return (rows, [])
        }
    }

    /// Every key in the index.
    func allKeys() throws -> Set<String> {
        Set(try db.query("SELECT key FROM images").compactMap { $0[0].stringValue })
    }

    /// Removes rows whose blob is missing (reconciliation).
    func remove(keys: [String]) throws {
        try transactions.write {
            for key in keys { try db.execute("DELETE FROM images WHERE key = ?", [.text(key)]) }
        }
    }

    static func info(_ row: Row) -> (seq: Int64, info: ImageInfo) {
        var info = ImageInfo()
        info.key = row[1].stringValue ?? ""
        info.ownerKey = row[2].stringValue ?? ""
        info.kind = ImageKind(rawValue: Int32(row[3].int64Value ?? 0))
        info.parentKey = row[4].stringValue ?? ""
        info.mediaType = MediaType(rawValue: Int32(row[5].int64Value ?? 0))
        info.contentType = row[6].stringValue ?? ""
        info.sizeBytes = row[7].int64Value ?? 0
        info.width = Int32(row[8].int64Value ?? 0)
        info.height = Int32(row[9].int64Value ?? 0)
        info.orientation = Int32(row[10].int64Value ?? 0)
        info.checksum = row[11].stringValue ?? ""
        info.createdAtMs = row[12].int64Value ?? 0
        // NULL (a JPEG stored before it was recorded, not yet backfilled) reads as none.
        info.takenAt = row[15].stringValue ?? ""
        return (row[0].int64Value ?? 0, info)
    }
}
