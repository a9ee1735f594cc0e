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
    let renderThreads = BlockingPool(name: "images-render", count: ImageStore.renderSlots)
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
        let writer = DatabaseOwner<ImageIndex>(name: "image-index", closedError: ImageStoreError.closed, onFault: { onFault("images.db: \($0)") }) {
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
        let reader = DatabaseOwner<ImageIndex>(name: "image-reader", closedError: ImageStoreError.closed, groupCommit: false) {
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
        work.disk.start()
        work.digests.start()
        renderThreads.start()
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
        // The disk threads' work may still commit a row (and read its digests): it ends first.
        renderThreads.stop()
        work.disk.stop()
        work.digests.stop()
        // The writer last: the last connection to close checkpoints the WAL, which the
        // read-only reader cannot.
        reader.close()
        writer.close()
        // It keeps the thumbnail JobQueueService, which keeps this store: a cycle otherwise.
        thumbnails.tellCommittedJobs(to: nil)
    }

    // MARK: Where work runs
    // The verbs of `StoreWork` (see there), forwarded, for the store's own extensions; its
    // pieces (`Uploads`, `Thumbnails`) are given the `StoreWork` itself.

    /// The writer connection of images.db (see `StoreWork.writer`).
    var writer: DatabaseOwner<ImageIndex> { work.writer }
    /// The reader connection of images.db (see `StoreWork.reader`).
    var reader: DatabaseOwner<ImageIndex> { work.reader }
    var digests: BlockingPool { work.digests }

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

    func onDisk<T: Sendable>(in pool: BlockingPool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await work.onDisk(in: pool, body)
    }

    func onLane<T: Sendable>(in pool: BlockingPool? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await work.onLane(in: pool, body)
    }

    /// A read the disk failed (EIO, or another error than a missing file): it changed nothing,
    /// and may pass later.
    static func readFailure(_ error: BlobIOError) -> ImageStoreError {
        .unavailable("the image store's disk failed reading (\(error)); nothing was changed, retry later")
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
