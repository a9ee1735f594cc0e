import Proto
import SQLite

/// The rows the `thumbnails` queue reads and writes: which images thumbnails are made from,
/// which sizes each has, and the THUMBNAIL rows a completed job adds or replaces.
extension ImageIndex {
    /// What `thumbnailSources` finds of one image: its key and the sizes asked for that it has.
    struct ThumbnailSource: Equatable {
        var sequence: Int64
        var key: String
        var has: Set<Int>
    }

    /// A page of the images thumbnails are made from (JPEG, PNG and HEIC ORIGINAL and EDITED, movies), in stored
    /// order after `afterSequence`, each with the sizes of `sizes` it already has a THUMBNAIL
    /// of: one query for the page, however many images it holds.
    ///
    /// - Parameter keys: Only these images; nil for all.
    func thumbnailSources(after afterSequence: Int64, limit: Int, keys: [String]?, sizes: [Int]) throws -> [ThumbnailSource] {
        let sizeList = sizes.map(String.init).joined(separator: ",")
        var sql = """
            SELECT i.seq, i.key,
              (SELECT group_concat(t.thumbnail_size) FROM images t
                 WHERE t.parent_key = i.key AND t.kind = \(ImageKind.thumbnail.rawValue) AND t.thumbnail_size IN (\(sizeList)))
            FROM images i
            WHERE i.seq > ? AND i.kind IN (\(ImageKind.original.rawValue), \(ImageKind.edited.rawValue))
              AND \(ThumbnailQueue.wantedSQL)
            """
        var params: [SQLiteValue] = [.integer(afterSequence)]
        if let keys {
            sql += " AND i.key IN (\(Array(repeating: "?", count: keys.count).joined(separator: ",")))"
            params += keys.map { .text($0) }
        }
        sql += " ORDER BY i.seq LIMIT ?"
        params.append(.integer(Int64(limit)))
        return try db.query(sql, params).map { row in
            let has = (row[2].stringValue ?? "").split(separator: ",").compactMap { Int($0) }
            return ThumbnailSource(sequence: row[0].int64Value ?? 0, key: row[1].stringValue ?? "", has: Set(has))
        }
    }

    /// The generation of the image stored under `key` (its row's sequence number, new each time
    /// the key is stored); nil when there is none.
    func generation(of key: String) throws -> Int64? {
        try db.scalar("SELECT seq FROM images WHERE key = ?", [.text(key)])?.int64Value
    }

    /// The THUMBNAIL images of `parentKey` made at one of `sizes`.
    func thumbnails(of parentKey: String, sizes: [Int]) throws -> [ImageInfo] {
        let sizeList = sizes.map(String.init).joined(separator: ",")
        return try db.query(
            "SELECT \(Self.columns) FROM images WHERE parent_key = ? AND kind = \(ImageKind.thumbnail.rawValue) AND thumbnail_size IN (\(sizeList)) ORDER BY seq",
            [.text(parentKey)]
        ).map { Self.info($0).info }
    }

    /// Adds the THUMBNAIL rows a completed job made, inside the write that completes it, after
    /// deleting the rows of `replaced` that are still THUMBNAILs of the same parent (an older
    /// thumbnail of a size made again); returns the rows deleted.
    func replaceThumbnails(_ replaced: [ImageInfo], with new: [(image: StoredImage, size: Int)]) throws -> [ImageInfo] {
        var removed: [ImageInfo] = []
        for old in replaced {
            try db.execute(
                "DELETE FROM images WHERE key = ? AND parent_key = ? AND kind = \(ImageKind.thumbnail.rawValue)",
                [.text(old.key), .text(old.parentKey)])
            if db.changes > 0 { removed.append(old) }
        }
        for (image, size) in new {
            try insertRow(image.info, contentCheck: image.contentCheck, blockChecks: image.blockChecks, thumbnailSize: size)
        }
        return removed
    }
}
