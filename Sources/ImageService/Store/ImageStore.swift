import Digest
import Dispatch
import Foundation
import JobQueue
import Media
import Proto
import Runtime
import SQLite
import Locking

/// Where images are stored: blob files under `blobs/`, their metadata in `images.db`, hot bytes in
/// the cache.
///
/// Every method is async and never blocks the caller's thread: each SQLite connection (the
/// writer, with group commit, and a reader) has its owner (`DatabaseOwner`), and file I/O runs
/// on lanes of its own (`Lanes`). Nothing is opened before `start()`; `close()` waits for the
/// lanes' work and joins the owners' threads.
public final class ImageStore: Sendable {
    let blobs: BlobStore
    /// The memory cache over blob and rendition bytes.
    public let cache: ImageCache
    let limits: ImageStoreLimits
    let clock: any WallClock
    let logger: Logger
    /// Where its work runs: images.db's writer and reader, the I/O and digest lanes.
    let work: StoreWork
    /// Renders (GetRendition's decodes), one per core, off the I/O lanes (see `LanePool`).
    let renderLanes = LanePool(label: "homepwner.images.render", count: ImageStore.renderSlots)
    /// The chunked uploads open now (see `Uploads`).
    let uploads: Uploads
    /// Blobs read once from disk lately (see `admits`).
    let recentReads = Locked(RecentReads())
    /// Keys being stored or deleted (see `KeyClaims`).
    let claims = KeyClaims()
    /// Test hooks (all nil in service).
    let hooks: StoreHooks
    /// What `start()` found, once it has run.
    let recoveryReport = RecoveryRecord()
    /// The `thumbnails` job queue's side in the store (see `Thumbnails`).
    let thumbnails: Thumbnails

    /// A store in `folder` (its folders are made now); `start()` opens (or creates) the index,
    /// removes leftovers of interrupted writes and reconciles the index with the files.
    ///
    /// - Parameter thumbnailSizes: The sizes each stored JPEG original or edit gets a thumbnail
    ///   job for, in the transaction that stores it; empty for none.
    /// - Parameter onFault: Told when a write's outcome is left unknown by the disk (an fsync
    ///   that failed after a commit): the process should stop (`FaultWatch`).
    public convenience init(
        folder: String, cache: ImageCache, limits: ImageStoreLimits = .init(), clock: any WallClock = SystemClock(),
        logger: Logger, thumbnailSizes: [Int] = ThumbnailQueue.defaultSizes, onFault: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        try self.init(
            folder: folder, cache: cache, limits: limits, clock: clock, logger: logger, hooks: StoreHooks(),
            thumbnailSizes: thumbnailSizes, onFault: onFault)
    }

    /// `init(folder:cache:limits:clock:logger:)` with test hooks in place from the start.
    init(
        folder: String, cache: ImageCache, limits: ImageStoreLimits = .init(), clock: any WallClock = SystemClock(),
        logger: Logger, hooks: StoreHooks, thumbnailSizes: [Int] = ThumbnailQueue.defaultSizes,
        onFault: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        self.hooks = hooks
        blobs = try BlobStore(root: folder, hooks: hooks)
        self.cache = cache
        self.limits = limits
        self.clock = clock
        self.logger = logger
        let thumbnailQueue = ThumbnailQueue.configuration(retention: limits.jobRetention)
        let path = folder + "/images.db", recoveryReport = recoveryReport, blobs = blobs
        let closed = ImageStoreError.failedPrecondition("the image store is closed (stopping)")
        let writer = DatabaseOwner<ImageIndex>(name: "image-index", closedError: closed, onFault: { onFault("images.db: \($0)") }) {
            let index = try ImageIndex(path: path, thumbnailSizes: thumbnailSizes, thumbnailQueue: thumbnailQueue)
            do {
                let report = try Self.reconcile(index: index, blobs: blobs, now: clock.nowMilliseconds())
                recoveryReport.report.withLock { $0 = report }
            } catch {
                try? index.close()
                throw error
            }
            return index
        }
        let reader = DatabaseOwner<ImageIndex>(name: "image-reader", closedError: closed, groupCommit: false) {
            try ImageIndex(path: path, readOnly: true, thumbnailQueue: thumbnailQueue)
        }
        work = StoreWork(writer: writer, reader: reader)
        thumbnails = Thumbnails(
            defaultSizes: thumbnailSizes, queue: thumbnailQueue, work: work, blobs: blobs, cache: cache, claims: claims,
            limits: limits, clock: clock, logger: logger)
        uploads = Uploads(work: work, blobs: blobs, claims: claims, limits: limits, clock: clock, logger: logger, hooks: hooks)
    }

    /// Opens the index (creating or migrating it), reconciles it with the files and opens the
    /// reader beside it; throws what opening threw, with nothing left open. Call once.
    public func start() throws {
        try writer.start()
        do {
            try reader.start()
        } catch {
            writer.close()
            throw error
        }
        let report = recovery
        uploads.load(report.openUploads)
        pruneQuarantine()
        if report.truncatedUploads + report.droppedUploads > 0 {
            logger.info(
                "open uploads recovered: \(report.openUploads.count) resumable, \(report.truncatedUploads) cut back to their acknowledged bytes, \(report.droppedUploads) dropped (expired, or their staging file was gone)")
        }
        if report.finishedPuts + report.leftovers + report.quarantined + report.missingFiles.count > 0 {
            logger.warning(
                "image store recovered: \(report.finishedPuts) committed puts renamed into place, \(report.leftovers) interrupted writes removed, \(report.quarantined) blobs without an index row moved to \(report.quarantineFolder.isEmpty ? "quarantine" : report.quarantineFolder) (not deleted: with an images.db restored from an older copy they are the newer photos; put them back under blobs/ with an index that lists them, or remove the folder), \(report.missingFiles.count) indexed images without a file",
                ["missing": report.missingFiles.prefix(10).joined(separator: ",")])
        }
    }

    /// Closes open uploads (kept on disk with their rows, to be resumed), waits for the work on the lanes and closes both connections, joining
    /// their threads. Safe to call twice, and without `start()`.
    public func close() {
        // Idle uploads go now, the others when their call ends.
        uploads.close()
        // The lanes' work may still commit a row (and read its digests): it ends first.
        ioLanes.drain()
        digestLanes.drain()
        // The writer last: the last connection to close checkpoints the WAL, which the
        // read-only reader cannot.
        reader.close()
        writer.close()
        // It keeps the thumbnail JobQueueService, which keeps this store: a cycle otherwise.
        thumbnails.tellCommittedJobs(to: nil)
    }

    // MARK: Where work runs (see `StoreWork`)

    /// The writer connection of images.db (see `StoreWork.writer`).
    var writer: DatabaseOwner<ImageIndex> { work.writer }
    /// The reader connection of images.db (see `StoreWork.reader`).
    var reader: DatabaseOwner<ImageIndex> { work.reader }
    var ioLanes: Lanes { work.ioLanes }
    var digestLanes: Lanes { work.digestLanes }

    func indexWrite<T: Sendable>(_ body: @escaping @Sendable (ImageIndex) throws -> T) async throws -> T {
        try await work.indexWrite(body)
    }

    func indexWriteLater(
        _ body: @escaping @Sendable (ImageIndex) throws -> Void, failure: @escaping @Sendable (any Error) -> Void
    ) {
        work.indexWriteLater(body, failure: failure)
    }

    func indexRead<T: Sendable>(_ body: @escaping @Sendable (ImageIndex) throws -> T) async throws -> T {
        try await work.indexRead(body)
    }

    func indexReadHere(_ key: String) throws -> StoredImage? { try work.indexReadHere(key) }

    func onDisk<T: Sendable>(in pool: LanePool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await work.onDisk(in: pool, body)
    }

    func onLane<T: Sendable>(in pool: LanePool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await work.onLane(in: pool, body)
    }

    /// A read the disk failed (EIO, or another error than a missing file): it changed nothing,
    /// and may pass later.
    static func readFailure(_ error: BlobIOError) -> ImageStoreError {
        .unavailable("the image store's disk failed reading (\(error)); nothing was changed, retry later")
    }

    // MARK: Put

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
        let (stored, restored) = try await onDisk { () throws -> (StoredImage, Bool) in
            beforeWriting?(key)
            // Waited past its deadline (for the key's claim, behind other puts on the lanes):
            // its caller has its DEADLINE_EXCEEDED; writing now would only store what it may
            // send again.
            if abandoned() { throw CancellationError() }
            let media = try Self.classify(data, maxPixels: limits.maxPixels, maxDecodeBytes: limits.maxRenditionSourceBytes)
            try Self.check(media, against: new)
            let (temporary, digests) = try self.writeTemporary(data, key: key)
            if let replacing, replacing.info.sizeBytes == Int64(data.count), replacing.info.checksum == digests.checksum {
                // The bytes the row was stored with: its blob again, the row as it is.
                do {
                    try blobs.publish(temporary: temporary, key: key)
                } catch {
                    unlink(temporary)
                    throw error
                }
                return (replacing, true)
            }
            let stored = StoredImage(
                info: self.makeInfo(new, media: media, size: Int64(data.count), checksum: digests.checksum),
                contentCheck: digests.check, blockChecks: digests.blocks)
            try self.placeAndIndex(temporary, stored, replacing: replacing)
            if let note = media.extraneousNote(key: key) { self.logger.info(note) }
            return (stored, false)
        }
        if let replacing {
            if restored {
                logger.warning(
                    "put of image \(key): its row was there without its blob file (a crash lost the rename before it reached the disk, or the file was removed); the bytes sent match its checksum and are its blob again")
            } else {
                logger.warning(
                    "put of image \(key): its row was there without its blob file (a crash lost the rename before it reached the disk, or the file was removed), and the bytes sent are not the ones it was stored with (\(replacing.info.sizeBytes) bytes, \(replacing.info.checksum)); that image cannot be recovered, and this one (\(stored.info.sizeBytes) bytes, \(stored.info.checksum)) replaces it under its key")
            }
        }
        let info = stored.info
        // Small blobs (thumbnails, small photos) are likely read soon and cost little to keep. A
        // large original is cached when it is read again (`admits`): caching every upload would push
        // hot thumbnails out, and would keep each put's buffer alive, so that every large put
        // needs (and page-faults in) fresh memory.
        if data.count <= Self.cacheOnPutBytes {
            cache.insert(stored.cacheKey, data.array, image: stored, ticket: ticket)
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
        try Self.writeTemporary(data, key: key, blobs: blobs, digestLanes: digestLanes)
    }

    /// `writeTemporary(_:key:)` with the blob store and digest lanes given (for `Thumbnails`).
    static func writeTemporary(
        _ data: some BlobBytes, key: String, blobs: BlobStore, digestLanes: Lanes
    ) throws -> (path: String, digests: Digests) {
        // The digests (SHA-256 ~2 GB/s on the SHA extensions, ~340 MB/s without; XXH64
        // ~22 GB/s, once whole and once per block) run on a second core while this one
        // writes and fsyncs.
        var temporary: String?
        do {
            let (digests, _) = try digestLanes.alongside({
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

    /// The row of a new image: what was declared, what the bytes are, and when it was made.
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
        return info
    }

    /// Adds the row of a blob already on disk; removes the blob when the row cannot be added.
    ///
    /// Rows that arrive while a commit is running are committed together by the next one (group
    /// commit): concurrent puts share fsyncs instead of queueing one fsync each.
    func insert(_ info: ImageInfo, contentCheck: String, blockChecks: BlockChecks = BlockChecks()) async throws {
        do {
            try await indexWrite { try $0.insert(info, contentCheck: contentCheck, blockChecks: blockChecks) }
            thumbnails.announceJob(for: info)
        } catch {
            // A row the disk may have kept names this blob: it stays (restart's recovery decides).
            if !(error is CommitOutcomeUnknown) { blobs.remove(key: info.key) }
            throw error
        }
    }

    /// Renames a fsynced temporary file into place as `image.info.key` and adds its row,
    /// durably, on the calling (I/O) thread.
    ///
    /// The folder's fsync (which makes the rename durable) and the row's commit run at the same
    /// time. A crash after the commit and before the rename reached the disk leaves the row and
    /// the whole temporary file: start-up finishes the rename (`finishInterruptedPuts`). On
    /// failure neither the row nor the blob (nor the temporary file) is left.
    ///
    /// - Parameter lost: A row of the same key whose blob file is gone: removed in the
    ///   transaction that adds this one. Should the folder fsync then
    ///   fail, neither row stays.
    func placeAndIndex(_ temporary: String, _ image: StoredImage, replacing lost: StoredImage? = nil) throws {
        let info = image.info
        do {
            try blobs.rename(temporary: temporary, key: info.key)
        } catch {
            unlink(temporary)
            throw error
        }
        let committed = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<Void, any Error>>(.success(()))
        writer.submit({ index in
            if let lost {
                try index.replace(lost, with: image)
            } else {
                try index.insert(info, contentCheck: image.contentCheck, blockChecks: image.blockChecks)
            }
        }) { result in
            outcome.withLock { $0 = result }
            committed.signal()
        }
        let synced = Result { try blobs.syncFolder(of: info.key) }
        committed.wait()
        let commit = outcome.withLock { $0 }
        if case .failure(let error) = commit {
            // Known not to be committed: nothing names the blob. Unknown (the disk failed under
            // the commit): the row may be there after the restart's recovery, so the blob stays;
            // without the row recovery quarantines it. Never a row without its bytes.
            if !(error is CommitOutcomeUnknown) { blobs.remove(key: info.key) }
            throw error
        }
        hooks.current.afterPutCommitted?(info.key)
        thumbnails.announceJob(for: info)
        if case .failure(let error) = synced {
            // The row is committed, but the rename may not survive a power loss, and an fsync
            // that failed is not retried and trusted: the service stops (as for the log's
            // fsync), the blob and the row stay, and recovery at the restart finds the file or
            // not (a row without its file is reported, and a put of the same bytes restores it).
            let reason = "fsync of the folder of blob \(info.key) failed after its row was committed: \(error)"
            writer.fault(reason)
            throw CommitOutcomeUnknown(reason: reason)
        }
    }

    /// The lower-case canonical form of a UUID, or nil.
    public static func canonicalKey(_ text: String) -> String? {
        guard text.utf8.count == 36 else { return nil }
        // The usual case, a key as this service wrote it: checked without Foundation.
        if isCanonical(text) { return text }
        guard let uuid = UUID(uuidString: text) else { return nil }
        return uuid.uuidString.lowercased()
    }

    /// An owner key as it is stored and matched: a UUID (an item key, which a client may send
    /// in upper case) in its canonical lower-case form, so that every spelling of it is one
    /// owner for AttachPhoto's check, ListImages, DeleteImagesForOwner and the record of a
    /// deleted owner; any other text as sent.
    public static func canonicalOwner(_ ownerKey: String) -> String {
        canonicalKey(ownerKey) ?? ownerKey
    }

    /// Whether `text` is a UUID in lower-case hex with hyphens at 8, 13, 18 and 23.
    static func isCanonical(_ text: String) -> Bool {
        var index = 0
        for byte in text.utf8 {
            switch index {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return false }
            default:
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                else { return false }
            }
            index += 1
        }
        return index == 36
    }
}
