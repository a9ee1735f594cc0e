import Digest
import Dispatch
import Foundation
import Locking
import Runtime
import Media
import Proto
import SQLite

/// PutImage: a new image's checks, its bytes written with their digests, and its blob and
/// row made durable together (what uploads and thumbnails store through as well).
extension ImageStore {
    /// Stores `data` as a new image and returns its metadata; with a client key that exists,
    /// returns the existing image and `created` false. On disk before it returns.
    ///
    /// A key whose row is there without its blob file (a crash after the row committed lost
    /// the rename, and the temporary file's entry with it: that put was never acknowledged)
    /// gets the bytes sent: the same bytes (size and SHA-256) become the row's blob, and the
    /// row stays as it was; other bytes replace the lost image under the key, as a new put
    /// would store them. Either way `created` is true (this call made the image readable),
    /// and it is logged.
    ///
    /// - Parameter abandoned: Asked once the put holds its key and its I/O lane, before it
    ///   writes: true (the call's deadline passed while it waited, and its caller was told so)
    ///   stores nothing and throws `CancellationError`.
    public func put(
        _ data: some BlobBytes, _ new: NewImage, abandoned: @escaping @Sendable () -> Bool = { false }
    ) async throws -> (info: ImageInfo, created: Bool) {
        guard data.count > 0 else { throw ImageStoreError.invalid("data is empty") }
        var validated = try await validate(new)
        let keyGiven = !validated.key.isEmpty
        if !keyGiven { validated.key = UUID().uuidString.lowercased() }
        let new = validated
        // Claim the key first, then look: every write of a key happens under its claim, so no
        // other put, commit or delete can slip in between the look and the rename. A key made
        // here is a fresh random UUID: nothing to look up.
        try await claims.claim(new.key)
        defer { claims.release(new.key) }
        let requestedKey = new.key
        let key = new.key
        let limits = limits, blobs = blobs
        // The row of the given key when its blob file is gone (see above).
        var lost: StoredImage?
        if keyGiven, let existing = try await indexWrite({ try $0.stored(requestedKey) }) {
            if try await onDisk({ blobs.exists(key: requestedKey) }) { return (existing.info, false) }
            lost = existing
            // Whatever the cache still holds of it (the file went while the service ran) is
            // not what this key will name once the put is done.
            cache.remove(prefix: key)
        }
        let replacing = lost
        let ticket = cache.removalTicket()
        let beforeWriting = hooks.current.beforePutWrites
        let (stored, restored, note) = try await onDisk { () throws -> (StoredImage, Bool, String?) in
            beforeWriting?(key)
            // Waited past its deadline (for the key's claim, behind other puts on the lanes):
            // its caller has its DEADLINE_EXCEEDED; writing now would only store what it may
            // send again.
            if abandoned() { throw CancellationError() }
            let media = try Self.classify(
                data, maxPixels: limits.maxPixels, maxDecodeBytes: limits.maxRenditionSourceBytes, maxDecodedBytes: limits.maxDecodedBytes)
            try Self.checkSize(media, size: Int64(data.count), limits: limits)
            try Self.check(media, against: new)
            let (temporary, digests) = try self.writeTemporary(data, key: key)
            // The bytes a lost row was stored with: its blob again (durable here, as the row is
            // kept as it is), else a new blob whose folder fsync runs beside its row's commit.
            let restoring = replacing.flatMap { $0.info.sizeBytes == Int64(data.count) && $0.info.checksum == digests.checksum ? $0 : nil }
            do {
                if restoring != nil { try blobs.publish(temporary: temporary, key: key) } else { try blobs.rename(temporary: temporary, key: key) }
            } catch {
                unlink(temporary)
                throw error
            }
            if let restoring { return (restoring, true, nil) }
            let stored = StoredImage(
                info: self.makeInfo(new, media: media, size: Int64(data.count), checksum: digests.checksum),
                contentCheck: digests.check, blockChecks: digests.blocks)
            return (stored, false, media.extraneousNote(key: key))
        }
        // As committed: an edit or thumbnail without a date of its own has its parent's.
        let placed = restored ? stored : try await indexPlaced(stored, replacing: replacing)
        if let note { logger.info(note) }
        if let replacing {
            if restored {
                logger.warning(
                    "put of image \(key): its row was there without its blob file (a crash lost the rename before it reached the disk, or the file was removed); the bytes sent match its checksum and are its blob again")
            } else {
                logger.warning(
                    "put of image \(key): its row was there without its blob file (a crash lost the rename before it reached the disk, or the file was removed), and the bytes sent are not the ones it was stored with (\(replacing.info.sizeBytes) bytes, \(replacing.info.checksum)); that image cannot be recovered, and this one (\(stored.info.sizeBytes) bytes, \(stored.info.checksum)) replaces it under its key")
            }
        }
        let info = placed.info
        // Small blobs (thumbnails, small photos) are likely read soon and cost little to keep. A
        // large original is cached when it is read again (`admits`): caching every upload would push
        // hot thumbnails out, and would keep each put's buffer alive, so that every large put
        // needs (and page-faults in) fresh memory.
        if data.count <= Self.cacheOnPutBytes {
            cache.insert(placed.cacheKey, data.array, image: placed, ticket: ticket)
        }
        return (info, true)
    }

    /// The digests of blob bytes: what the row records and reads verify.
    struct Digests: Sendable {
        /// "sha256:<hex>".
        var checksum: String
        /// "xxh64:<hex>".
        var check: String
        var blocks: BlockChecks
    }

    /// Writes `data` to a fsynced temporary file of `key` (on the calling I/O lane) while a
    /// digest lane computes its digests; returns the file's path and the digests. On failure
    /// nothing is left.
    func writeTemporary(_ data: some BlobBytes, key: String) throws -> (path: String, digests: Digests) {
        try Self.writeTemporary(data, key: key, blobs: blobs, digests: digests)
    }

    /// `writeTemporary(_:key:)` with the blob store and digest lanes given (for `Thumbnails`).
    static func writeTemporary(
        _ data: some BlobBytes, key: String, blobs: BlobStore, digests: BlockingPool
    ) throws -> (path: String, digests: Digests) {
        // The digests (SHA-256 ~2 GB/s on the SHA extensions, ~340 MB/s without; XXH64
        // ~22 GB/s, once whole and once per block) run on a second core while this one
        // writes and fsyncs.
        var temporary: String?
        do {
            let (digests, _) = try digests.alongside({
                try data.withBlobBytes { buffer in
                    var sha = SHA256(), xxh = XXHash64()
                    sha.update(buffer)
                    xxh.update(buffer)
                    return Digests(checksum: sha.checksum(), check: xxh.checksum(), blocks: BlockChecks.of(buffer))
                }
            }, while: {
                temporary = try data.withBlobBytes { try blobs.writeTemporary($0, key: key) }
            })
            return (temporary!, digests)
        } catch {
            if let temporary { unlink(temporary) }  // written, but its digests failed
            throw error
        }
    }

    /// Puts of blobs up to this size leave them in the cache.
    public static let cacheOnPutBytes = 1 << 20

    /// Checks key, kind and parent of a new image; fills the owner of a derived image from its parent.
    func validate(_ new: NewImage) async throws -> NewImage {
        var new = new
        if !new.key.isEmpty {
            guard let canonical = Self.canonicalKey(new.key) else {
                throw ImageStoreError.invalid("key \"\(new.key)\" is not a UUID")
            }
            new.key = canonical
        }
        new.ownerKey = Self.canonicalOwner(new.ownerKey)
        if new.kind == .unspecified { new.kind = .original }
        guard ImageKind.allCases.contains(new.kind) else {
            throw ImageStoreError.invalid("kind \(new.kind.rawValue) is not an ImageKind")
        }
        guard new.ownerKey.utf8.count <= 256 else {
            throw ImageStoreError.invalid("owner_key is \(new.ownerKey.utf8.count) bytes, over the limit of 256")
        }
        if new.kind == .original {
            guard new.parentKey.isEmpty else {
                throw ImageStoreError.invalid("parent_key is only for EDITED and THUMBNAIL images (kind is ORIGINAL)")
            }
        } else {
            guard !new.parentKey.isEmpty else {
                throw ImageStoreError.invalid("parent_key is required for kind \(new.kind)")
            }
            guard let parentKey = Self.canonicalKey(new.parentKey) else {
                throw ImageStoreError.invalid("parent_key \"\(new.parentKey)\" is not a UUID")
            }
            guard let parent = try await indexRead({ try $0.get(parentKey) }) else {
                throw ImageStoreError.notFound("parent_key \(parentKey): no such image")
            }
            new.parentKey = parentKey
            if new.ownerKey.isEmpty { new.ownerKey = parent.ownerKey }
        }
        try await refuseDeletedOwner(new.ownerKey)
        return new
    }

    /// Refuses a declared content or media type that the data contradicts.
    static func check(_ media: SniffedMedia, against new: NewImage) throws(ImageStoreError) {
        let declared = new.contentType.lowercased()
        let aliases: Set<String> = media.contentType == "image/jpeg" ? ["image/jpeg", "image/jpg", "image/pjpeg"] : [media.contentType]
        if !declared.isEmpty, !aliases.contains(declared) {
            throw .invalid("content_type \"\(new.contentType)\" does not match the data, which is \(media.contentType)")
        }
        if new.mediaType != .unspecified, new.mediaType != media.mediaType {
            throw .invalid("media_type \(new.mediaType) does not match the data, which is \(media.mediaType) (\(media.contentType))")
        }
    }

    func makeInfo(_ new: NewImage, media: SniffedMedia, size: Int64, checksum: String) -> ImageInfo {
        Self.makeInfo(new, media: media, size: size, checksum: checksum, createdAtMs: clock.nowMilliseconds())
    }

    /// The row of a new image: what was declared, what the bytes are (when a JPEG was taken
    /// among them), and when it was stored.
    static func makeInfo(_ new: NewImage, media: SniffedMedia, size: Int64, checksum: String, createdAtMs: Int64) -> ImageInfo {
        var info = ImageInfo()
        info.key = new.key
        info.ownerKey = new.ownerKey
        info.kind = new.kind
        info.parentKey = new.parentKey
        info.mediaType = media.mediaType
        info.contentType = media.contentType
        info.sizeBytes = size
        info.width = Int32(clamping: media.width)
        info.height = Int32(clamping: media.height)
        info.orientation = Int32(media.orientation)
        info.checksum = checksum
        info.createdAtMs = createdAtMs
        info.takenAt = media.takenAt
        return info
    }

    /// Adds the row of a blob already on disk and returns it as written (`ImageIndex.insertRow`);
    /// removes the blob when the row cannot be added.
    ///
    /// Rows that arrive while a commit is running are committed together by the next one (group
    /// commit): concurrent puts share fsyncs instead of queueing one fsync each.
    func insert(_ info: ImageInfo, contentCheck: String, blockChecks: BlockChecks = BlockChecks()) async throws -> ImageInfo {
        do {
            let written = try await indexWrite { try $0.insert(info, contentCheck: contentCheck, blockChecks: blockChecks) }
            thumbnails.announceJob(for: written)
            return written
        } catch {
            // A row the disk may have kept names this blob: it stays (restart's recovery decides).
            if !(error is CommitOutcomeUnknown) { blobs.remove(key: info.key) }
            throw error
        }
    }

    /// Adds the row of a blob just renamed into place (`BlobStore.rename`), durably: the
    /// folder's fsync (which makes the rename durable) runs on a disk thread while the writer
    /// commits the row. A crash after the commit and before the rename reached the disk leaves
    /// the row and the whole temporary file: start-up finishes the rename
    /// (`finishInterruptedPuts`). When the row is known not to be committed, the blob is
    /// removed. Neither step is cancelled with the calling task: once the rename is done, both
    /// must end.
    ///
    /// - Parameter lost: A row of the same key whose blob file is gone: removed in the
    ///   transaction that adds this one. Should the folder fsync then fail, neither row stays.
    /// - Returns: `image` as its row was committed (`ImageIndex.insertRow`: a derived image
    ///   without a date of its own has its parent's).
    @discardableResult
    func indexPlaced(_ image: StoredImage, replacing lost: StoredImage? = nil) async throws -> StoredImage {
        let info = image.info, blobs = blobs
        async let synced = Self.outcome { try await self.onLane { try blobs.syncFolder(of: info.key) } }
        let commit = await Self.outcome {
            try await self.indexWrite { index in
                if let lost {
                    try index.replace(lost, with: image)
                } else {
                    try index.insert(info, contentCheck: image.contentCheck, blockChecks: image.blockChecks)
                }
            }
        }
        let folderSynced = await synced
        let written: ImageInfo
        switch commit {
        case .success(let row): written = row
        case .failure(let error):
            // Known not to be committed: nothing names the blob. Unknown (the disk failed under
            // the commit): the row may be there after the restart's recovery, so the blob stays;
            // without the row recovery quarantines it. Never a row without its bytes.
            if !(error is CommitOutcomeUnknown) { try? await onLane { blobs.remove(key: info.key) } }
            throw error
        }
        // On a disk thread: a test's hook may block until it lets the put go on.
        if let committed = hooks.current.afterPutCommitted { _ = try? await onLane { committed(info.key) } }
        thumbnails.announceJob(for: info)
        if case .failure(let error) = folderSynced {
            // The row is committed, but the rename may not survive a power loss, and an fsync
            // that failed is not retried and trusted: the service stops (as for the log's
            // fsync), the blob and the row stay, and recovery at the restart finds the file or
            // not (a row without its file is reported, and a put of the same bytes restores it).
            let reason = "fsync of the folder of blob \(info.key) failed after its row was committed: \(error)"
            writer.fault(reason)
            throw CommitOutcomeUnknown(reason: reason)
        }
        var placed = image
        placed.info = written
        return placed
    }

    /// `body`'s result or error, as a value (for steps whose errors are weighed together).
    static func outcome<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}
