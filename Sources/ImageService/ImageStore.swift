import Digest
import Dispatch
import Foundation
import Proto
import Runtime
import SQLite
import Synchronization

/// Where images are stored: blob files under `blobs/`, their metadata in `images.db`, hot bytes in
/// the cache.
///
/// Every method is async and never blocks the caller's thread: each SQLite connection (the
/// writer, with group commit, and a reader) has its own serial queue, and file I/O runs on a
/// concurrent queue of its own.
public final class ImageStore: Sendable {
    let blobs: BlobStore
    /// The memory cache over blob and rendition bytes.
    public let cache: ImageCache
    let limits: ImageStoreLimits
    let clock: any WallClock
    let logger: Logger
    private let index: Mutex<ImageIndex>
    private let indexQueue = DispatchQueue(label: "homepwner.images.index")
    /// A second connection for lookups and lists, so reads never queue behind a commit's fsync.
    private let reader: Mutex<ImageIndex>
    private let readerQueue = DispatchQueue(label: "homepwner.images.reader")
    let ioQueue = DispatchQueue(label: "homepwner.images.io", attributes: .concurrent)
    let uploads = Mutex<[String: Upload]>([:])
    /// Set by `close()` while it holds the uploads lock (always taken first): uploads ending
    /// their call are then dropped.
    let closing = Mutex(false)
    private let keysInFlight = Mutex<Set<String>>([])
    /// Rows waiting for the next group commit.
    private let pendingInserts = Mutex<(rows: [PendingInsert], scheduled: Bool)>(([], false))
    /// Blobs too large to cache whose whole checksum was verified, by key: ranged reads of an
    /// unchanged file (same inode and mtime) skip re-hashing it.
    private let verifiedFiles = Mutex<[String: FileStamp]>([:])

    /// Opens (or creates) the store in `folder`, removes leftovers of interrupted writes and
    /// reconciles the index with the files.
    public init(
        folder: String, cache: ImageCache, limits: ImageStoreLimits = .init(), clock: any WallClock = SystemClock(),
        logger: Logger
    ) throws {
        blobs = try BlobStore(root: folder)
        self.cache = cache
        self.limits = limits
        self.clock = clock
        self.logger = logger
        let index = try ImageIndex(path: folder + "/images.db")
        let report = try Self.reconcile(index: index, blobs: blobs)
        self.index = Mutex(index)
        reader = Mutex(try ImageIndex(path: folder + "/images.db", readOnly: true))
        if report.leftovers + report.orphanFiles + report.missingFiles.count > 0 {
            logger.warning(
                "image store recovered: \(report.leftovers) interrupted writes removed, \(report.orphanFiles) unindexed blobs removed, \(report.missingFiles.count) indexed images without a file",
                ["missing": report.missingFiles.prefix(10).joined(separator: ",")])
        }
    }

    /// Closes the database and drops open uploads.
    public func close() {
        // Idle uploads go now; one with a call in flight is dropped when that call ends, so its
        // file descriptor is never closed under a running write (and reused by another file).
        let idle = uploads.withLock { uploads in
            closing.withLock { $0 = true }
            let ids = uploads.values.filter { !$0.busy }.map(\.id)
            return ids.compactMap { uploads.removeValue(forKey: $0) }
        }
        for upload in idle { upload.discard() }
        indexQueue.sync { index.withLock { $0.close() } }
        readerQueue.sync { reader.withLock { $0.close() } }
    }

    /// What start-up found.
    struct RecoveryReport {
        var leftovers = 0
        var orphanFiles = 0
        /// Images whose blob file is gone: kept, so reading them says DATA_LOSS instead of NOT_FOUND.
        var missingFiles: [String] = []
    }

    private static func reconcile(index: ImageIndex, blobs: BlobStore) throws -> RecoveryReport {
        var report = RecoveryReport()
        report.leftovers = blobs.removeTemporaryLeftovers()
        let indexed = try index.allKeys()
        let onDisk = Set(blobs.allKeys())
        // A file without a row is a put that crashed between rename and insert, or a delete
        // that crashed between the row and the file: never acknowledged, so never visible.
        for key in onDisk.subtracting(indexed) {
            blobs.remove(key: key)
            report.orphanFiles += 1
        }
        report.missingFiles = indexed.subtracting(onDisk).sorted()
        return report
    }

    // MARK: Queues

    func onIndex<T: Sendable>(_ body: @escaping @Sendable (ImageIndex) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            indexQueue.async {
                continuation.resume(with: Result {
                    try self.index.withLock { index throws -> T in
                        guard index.isOpen else { throw ImageStoreError.failedPrecondition("the image store is closed (stopping)") }
                        return try body(index)
                    }
                })
            }
        }
    }

    /// Runs a read-only lookup on the reader connection (sees every commit made before it starts).
    func onReader<T: Sendable>(_ body: @escaping @Sendable (ImageIndex) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            readerQueue.async {
                continuation.resume(with: Result {
                    try self.reader.withLock { reader throws -> T in
                        guard reader.isOpen else { throw ImageStoreError.failedPrecondition("the image store is closed (stopping)") }
                        return try body(reader)
                    }
                })
            }
        }
    }

    func onIO<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                ioQueue.async { continuation.resume(with: Result { try body() }) }
            }
        } catch let error as BlobIOError where error.code == ENOSPC || error.code == EDQUOT {
            // A full disk is a limit the operator can act on, not a bug.
            throw ImageStoreError.tooLarge("the image store's disk is full (\(error)); nothing was stored")
        }
    }

    // MARK: Put

    /// Stores `data` as a new image and returns its metadata; with a client key that exists,
    /// returns the existing image and `created` false. On disk before it returns.
    public func put(_ data: some BlobBytes, _ new: NewImage) async throws -> (info: ImageInfo, created: Bool) {
        guard data.count > 0 else { throw ImageStoreError.invalid("data is empty") }
        var validated = try await validate(new)
        let keyGiven = !validated.key.isEmpty
        if !keyGiven { validated.key = UUID().uuidString.lowercased() }
        let new = validated
        // Claim the key first, then look: every write of a key happens under its claim, so no
        // other put or commit can slip in between the look and the rename. A key made here is
        // a fresh random UUID: nothing to look up.
        try claim(new.key)
        defer { release(new.key) }
        let requestedKey = new.key
        if keyGiven, let existing = try await onIndex({ try $0.get(requestedKey) }) {
            return (existing, false)
        }
        let key = new.key
        let limits = limits, blobs = blobs
        let ticket = cache.removalTicket()
        let (media, checksum, check) = try await onIO { () throws -> (SniffedMedia, String, String) in
            let media = try MediaSniffer.classify(data, maxPixels: limits.maxPixels)
            try Self.check(media, against: new)
            // The digests (SHA-256 ~2 GB/s on the SHA extensions, ~340 MB/s without; XXH64
            // ~22 GB/s) run on a second core while this one writes and fsyncs.
            let digests = Mutex(("", ""))
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                let values = try? data.withBlobBytes { buffer in
                    var sha = SHA256(), xxh = XXHash64()
                    sha.update(buffer)
                    xxh.update(buffer)
                    return (sha.checksum(), xxh.checksum())
                }
                digests.withLock { $0 = values ?? ("", "") }
            }
            do {
                try data.withBlobBytes { try blobs.write($0, key: key) }
            } catch {
                group.wait()
                throw error
            }
            group.wait()
            let (checksum, check) = digests.withLock { $0 }
            return (media, checksum, check)
        }
        let info = makeInfo(new, media: media, size: Int64(data.count), checksum: checksum)
        try await insert(info, contentCheck: check)
        let stored = StoredImage(info: info, contentCheck: check)
        // Small blobs (thumbnails, small photos) are likely read soon and cost little to keep. A
        // large original is cached by its first read instead: caching every upload would push
        // hot thumbnails out, and would keep each put's buffer alive, so that every large put
        // needs (and page-faults in) fresh memory.
        if data.count <= Self.cacheOnPutBytes {
            cache.insert(stored.cacheKey, data.array, image: stored, ticket: ticket)
        }
        return (info, true)
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
            guard let parent = try await onReader({ try $0.get(parentKey) }) else {
                throw ImageStoreError.notFound("parent_key \(parentKey): no such image")
            }
            new.parentKey = parentKey
            if new.ownerKey.isEmpty { new.ownerKey = parent.ownerKey }
        }
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
        info.createdAtMs = clock.nowMilliseconds()
        return info
    }

    /// Adds the row of a blob already on disk; removes the blob when the row cannot be added.
    ///
    /// Rows that arrive while a commit is running are committed together by the next one (group
    /// commit): concurrent puts share fsyncs instead of queueing one fsync each.
    func insert(_ info: ImageInfo, contentCheck: String) async throws {
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let schedule = pendingInserts.withLock { state -> Bool in
                    state.rows.append(PendingInsert(info: info, contentCheck: contentCheck, done: continuation))
                    defer { state.scheduled = true }
                    return !state.scheduled
                }
                if schedule { indexQueue.async { self.commitPendingInserts() } }
            }
        } catch {
            blobs.remove(key: info.key)
            throw error
        }
    }

    /// Commits every waiting row in one transaction (on the index queue).
    private func commitPendingInserts() {
        let batch = pendingInserts.withLock { state in
            defer {
                state.rows = []
                state.scheduled = false
            }
            return state.rows
        }
        guard !batch.isEmpty else { return }
        let outcome = Result {
            try index.withLock { index in
                guard index.isOpen else { throw ImageStoreError.failedPrecondition("the image store is closed (stopping)") }
                try index.insertAll(batch.map { ($0.info, $0.contentCheck) })
            }
        }
        if case .failure = outcome, batch.count > 1 {
            // One bad row must not fail the others: each on its own.
            for row in batch {
                row.done.resume(with: Result {
                    try index.withLock { index in
                        guard index.isOpen else { throw ImageStoreError.failedPrecondition("the image store is closed (stopping)") }
                        try index.insert(row.info, contentCheck: row.contentCheck)
                    }
                })
            }
            return
        }
        for row in batch { row.done.resume(with: outcome) }
    }

    func claim(_ key: String) throws {
        let claimed = keysInFlight.withLock { $0.insert(key).inserted }
        guard claimed else { throw ImageStoreError.aborted("another put of key \(key) is in progress; retry") }
    }

    func release(_ key: String) { _ = keysInFlight.withLock { $0.remove(key) } }

    /// The lower-case canonical form of a UUID, or nil.
    public static func canonicalKey(_ text: String) -> String? {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else { return nil }
        return uuid.uuidString.lowercased()
    }

    // MARK: Read

    /// The metadata of an image; NOT_FOUND when there is none.
    public func info(_ key: String, field: String = "key") async throws -> ImageInfo {
        try await image(key, field: field).info
    }

    /// The index row of an image (metadata and content check); NOT_FOUND when there is none.
    public func image(_ key: String, field: String = "key") async throws -> StoredImage {
        guard let canonical = Self.canonicalKey(key) else {
            throw ImageStoreError.invalid("\(field) \"\(key)\" is not a UUID")
        }
        guard let image = try await onReader({ try $0.stored(canonical) }) else {
            throw ImageStoreError.notFound("\(field) \(canonical): no such image")
        }
        return image
    }

    /// The row and bytes of image `key` (all, or `length` at `offset`) when the cache holds
    /// them, without asking the index; nil when not cached, or for a key or range a full read
    /// must judge (it names the problem).
    public func cachedRead(_ key: String, offset: Int64, length: Int64) -> (image: StoredImage, bytes: [UInt8])? {
        guard let canonical = Self.canonicalKey(key), offset >= 0, length >= 0,
              let (image, bytes) = cache.image(canonical)
        else { return nil }
        let size = Int64(bytes.count)
        guard offset < size, length <= size - offset else { return nil }
        if offset == 0 && (length == 0 || length == size) { return (image, bytes) }
        let end = length == 0 ? size : offset + length
        return (image, Array(bytes[Int(offset)..<Int(end)]))
    }

    /// Bytes of an image by its metadata (looks its content check up first).
    public func read(_ info: ImageInfo, offset: Int64 = 0, length: Int64 = 0) async throws -> [UInt8] {
        let key = info.key
        guard let image = try await onReader({ try $0.stored(key) }) else {
            throw ImageStoreError.notFound("key \(key): no such image")
        }
        return try await read(image, offset: offset, length: length)
    }

    /// Bytes of an image: all of them, or `length` bytes at `offset` (0 = to the end), verified
    /// against the stored checksum (DATA_LOSS when they differ).
    public func read(_ image: StoredImage, offset: Int64 = 0, length: Int64 = 0) async throws -> [UInt8] {
        let info = image.info
        let size = info.sizeBytes
        guard offset >= 0 else { throw ImageStoreError.invalid("offset must be ≥ 0 (got \(offset))") }
        guard length >= 0 else { throw ImageStoreError.invalid("length must be ≥ 0 (got \(length))") }
        guard offset < size else {
            throw ImageStoreError.outOfRange("offset \(offset) is past the end of image \(info.key) (\(size) bytes)")
        }
        let count = length == 0 ? size - offset : length
        guard count <= size - offset else {
            let end = offset.addingReportingOverflow(length)
            throw ImageStoreError.outOfRange(
                "offset \(offset) + length \(length) = \(end.overflow ? "more than \(Int64.max)" : String(end.partialValue)) is past the end of image \(info.key) (\(size) bytes)")
        }
        let whole = offset == 0 && count == size
        let ticket = cache.removalTicket()
        if let cached = cache.get(image.cacheKey) {
            return whole ? cached : Array(cached[Int(offset)..<Int(offset + count)])
        }
        let blobs = blobs, key = info.key, checksum = image.verification
        // Blobs small enough to cache are read whole (and cached); larger ones stream the checksum.
        if size <= Int64(cache.budgetBytes / 4) || whole {
            let bytes = try await readVerified(key: key) { try blobs.read(key: key, size: size, checksum: checksum) }
            cache.insert(image.cacheKey, bytes, image: image, ticket: ticket)
            return whole ? bytes : Array(bytes[Int(offset)..<Int(offset + count)])
        }
        let known = verifiedFiles.withLock { $0[key] }
        let (bytes, stamp) = try await readVerified(key: key) {
            try blobs.read(key: key, size: size, checksum: checksum, offset: offset, length: count, verified: known)
        }
        if stamp != known { verifiedFiles.withLock { $0[key] = stamp } }
        return bytes
    }

    private func readVerified<T: Sendable>(
        key: String, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        do {
            return try await onIO(body)
        } catch let damage as BlobDamage {
            logger.error("\(damage)")
            throw ImageStoreError.damaged(damage.description)
        } catch let error as BlobIOError where error.code == ENOENT {
            // Deleted while this read was on its way: gone, not damaged.
            if try await onReader({ try $0.get(key) }) == nil {
                throw ImageStoreError.notFound("key \(key): no such image (deleted)")
            }
            throw ImageStoreError.damaged("image \(error.path.split(separator: "/").last ?? "") is damaged on disk: its blob file is missing")
        }
    }

    /// A page of images in created order; `pageToken` is the `next` of the previous page.
    public func list(
        ownerKey: String = "", kind: ImageKind = .unspecified, mediaType: MediaType = .unspecified,
        pageSize: Int = 100, pageToken: String = ""
    ) async throws -> (images: [ImageInfo], next: String) {
        guard (0...1000).contains(pageSize) else {
            throw ImageStoreError.invalid("page_size must be 0…1000 (got \(pageSize)); 0 means 100")
        }
        guard ImageKind.allCases.contains(kind) else { throw ImageStoreError.invalid("kind \(kind.rawValue) is not an ImageKind") }
        guard MediaType.allCases.contains(mediaType) else {
            throw ImageStoreError.invalid("media_type \(mediaType.rawValue) is not a MediaType")
        }
        var query = ImageQuery(ownerKey: ownerKey, kind: kind, mediaType: mediaType)
        query.limit = pageSize == 0 ? 100 : pageSize
        if !pageToken.isEmpty {
            guard let after = Int64(pageToken), after > 0 else {
                throw ImageStoreError.invalid("page_token \"\(pageToken)\" is not one this service issued")
            }
            query.afterSequence = after
        }
        let finalQuery = query
        let page = try await onReader { try $0.list(finalQuery) }
        return (page.images, page.more ? String(page.last) : "")
    }

    // MARK: Delete

    /// Deletes an image and the images made from it; NOT_FOUND when it does not exist.
    public func delete(_ key: String) async throws -> [ImageInfo] {
        let info = try await info(key)
        let removed = try await onIndex { try $0.delete(info.key) }
        try await removeFiles(removed)
        return removed
    }

    /// Deletes every image of `ownerKey`; none is not an error (it is the item delete's cascade).
    public func deleteOwner(_ ownerKey: String) async throws -> [ImageInfo] {
        guard !ownerKey.isEmpty else { throw ImageStoreError.invalid("owner_key must not be empty") }
        let removed = try await onIndex { try $0.deleteOwner(ownerKey) }
        try await removeFiles(removed)
        return removed
    }

    private func removeFiles(_ removed: [ImageInfo]) async throws {
        let blobs = blobs
        // The rows are gone first: a crash before the unlink leaves an orphan file that start-up removes.
        try await onIO { for image in removed { blobs.remove(key: image.key) } }
        for image in removed { cache.remove(prefix: image.key) }
        verifiedFiles.withLock { files in for image in removed { files[image.key] = nil } }
    }
}

/// A row waiting for its group commit, and the put waiting for it.
struct PendingInsert: Sendable {
    let info: ImageInfo
    let contentCheck: String
    let done: CheckedContinuation<Void, any Error>
}
