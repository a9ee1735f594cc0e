import Digest
import Foundation
import Proto
import Locking
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Reading, listing and deleting images.
extension ImageStore {
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
        guard let image = try await indexRead({ try $0.stored(canonical) }) else {
            throw ImageStoreError.notFound("\(field) \(canonical): no such image")
        }
        return image
    }

    /// The row and bytes of image `key` (all, or `length` at `offset`) when the cache holds
    /// them, without asking the index; nil when not cached, or for a key or range a full read
    /// must judge (it names the problem).
    public func cachedRead(_ key: String, offset: Int64, length: Int64) -> CachedImage? {
        guard let canonical = Self.canonicalKey(key), offset >= 0, length >= 0,
              let (image, encodedInfo, bytes) = cache.image(canonical)
        else { return nil }
        let size = Int64(bytes.count)
        guard offset < size, length <= size - offset else { return nil }
        let end = length == 0 ? size : offset + length
        return CachedImage(image: image, encodedInfo: encodedInfo, bytes: bytes[Int(offset)..<Int(end)])
    }

    /// Bytes of an image by its metadata (looks its content check up first).
    public func read(_ info: ImageInfo, offset: Int64 = 0, length: Int64 = 0) async throws -> [UInt8] {
        let key = info.key
        guard let image = try await indexRead({ try $0.stored(key) }) else {
            throw ImageStoreError.notFound("key \(key): no such image")
        }
        return try await read(image, offset: offset, length: length)
    }

    /// Bytes of an image: all of them, or `length` bytes at `offset` (0 = to the end), verified
    /// against the stored checks (DATA_LOSS when they differ).
    public func read(_ image: StoredImage, offset: Int64 = 0, length: Int64 = 0) async throws -> [UInt8] {
        let (offset, count) = try range(of: image, offset: offset, length: length)
        let size = image.info.sizeBytes
        let whole = offset == 0 && count == size
        let ticket = cache.removalTicket()
        if let cached = cache.get(image.cacheKey) {
            return whole ? cached : Array(cached[Int(offset)..<Int(offset + count)])
        }
        // Only a read of every block may cache the blob (`readsEveryBlock`); any other range
        // reads and verifies exactly its own blocks.
        let cacheIt = readsEveryBlock(image, offset: offset, count: count) && admits(image)
        let readWhole = whole || cacheIt
        let bytes = try await readFromDisk(image, offset: readWhole ? 0 : offset, count: readWhole ? size : count)
        if cacheIt { cache.insert(image.cacheKey, bytes, image: image, ticket: ticket) }
        return whole || !readWhole ? bytes : Array(bytes[Int(offset)..<Int(offset + count)])
    }

    /// GetImage's path for an image the cache does not hold, on one I/O lane from its start
    /// (the index lookup included) to its end, so no other thread is woken on the way: `key`
    /// is looked up, `accept` may refuse the image (a reply limit), and the bytes asked for
    /// arrive in `target(image, count)` (the reply's frame) verified, read from the file
    /// straight into it, or copied from the cache. A read of every block of a blob the cache
    /// takes (`readsEveryBlock`, `admits`) caches it, as `read` does; read whole, each block
    /// is copied for the cache as it arrives, while it is in the CPU's caches. `done` gets the
    /// filled target, or the refusal, on that lane.
    public func read<Target: ReadTarget>(
        key: String, offset: Int64, length: Int64, accept: @escaping @Sendable (StoredImage) throws -> Void,
        into target: @escaping @Sendable (StoredImage, Int) -> Target,
        done: @escaping @Sendable (Result<Target, any Error>) -> Void
    ) {
        work.disk.submit({
            guard let canonical = Self.canonicalKey(key) else {
                done(.failure(ImageStoreError.invalid("key \"\(key)\" is not a UUID")))
                return
            }
            let result = Result { () throws -> Target in
                guard let image = try self.indexReadHere(canonical) else {
                    throw ImageStoreError.notFound("key \(canonical): no such image")
                }
                try accept(image)
                return try self.readNow(image, offset: offset, length: length) { target(image, $0) }
            }
            done(result.mapError { self.readError($0, key: canonical) { try self.indexReadHere(canonical) != nil } })
        }, refused: { _ in done(.failure(ImageStoreError.closed)) })
    }

    /// The read of `read(key:offset:length:accept:into:done:)` on the calling thread (an I/O
    /// lane); file errors and damage are thrown as they are (see `readError`).
    private func readNow<Target: ReadTarget>(
        _ image: StoredImage, offset: Int64, length: Int64, into target: (Int) -> Target
    ) throws -> Target {
        let (offset, count) = try range(of: image, offset: offset, length: length)
        let size = image.info.sizeBytes
        let whole = offset == 0 && count == size
        let ticket = cache.removalTicket()
        var cached = cache.get(image.cacheKey)
        let cacheIt = cached == nil && readsEveryBlock(image, offset: offset, count: count) && admits(image)
        var computed: BlockChecks?
        defer { if let computed { storeBlockChecks(computed, of: image) } }
        if cacheIt, !whole {
            // A range that reads every block anyway: read whole (and cached), as by `read`.
            let read = blobRead(image, offset: 0)
            let bytes = try [UInt8](unsafeUninitializedCapacity: Int(size)) { buffer, initialized in
                computed = try read(UnsafeMutableRawBufferPointer(buffer), nil)
                initialized = Int(size)
            }
            cache.insert(image.cacheKey, bytes, image: image, ticket: ticket)
            cached = bytes
        }
        let filled = target(Int(count))
        if let cached {
            cached.withUnsafeBytes { source in
                filled.bytes.baseAddress!.copyMemory(from: source.baseAddress! + Int(offset), byteCount: Int(count))
            }
            return filled
        }
        let read = blobRead(image, offset: offset)
        guard cacheIt else {
            computed = try read(filled.bytes, nil)
            return filled
        }
        let copy = try [UInt8](unsafeUninitializedCapacity: Int(count)) { buffer, initialized in
            computed = try read(filled.bytes, UnsafeMutableRawBufferPointer(buffer))
            initialized = Int(count)
        }
        cache.insert(image.cacheKey, copy, image: image, ticket: ticket)
        return filled
    }

    /// Whether a read of `count` bytes at `offset` reads every byte of the blob anyway: the
    /// whole blob, a range that reaches into each of its blocks (any range of a blob of one
    /// block), or any range of a row without block checks (verified whole). Only such a read
    /// may cache the blob, and only such a read counts for `admits`.
    ///
    /// Any other range reads and verifies its own blocks and nothing else: reading the whole
    /// blob to cache it would make a 100-byte range cost up to a quarter of the cache budget,
    /// and would fail it for damage outside its blocks, on every second read, when the docs
    /// promise that a range wholly in undamaged blocks is answered.
    func readsEveryBlock(_ image: StoredImage, offset: Int64, count: Int64) -> Bool {
        guard !image.blockChecks.isEmpty else { return true }
        let block = Int64(BlockChecks.blockSize), size = image.info.sizeBytes
        return offset < block && offset + count > (size - 1) / block * block
    }

    /// Whether a blob read from disk (whole) goes into the cache: up to 1 MiB (what a put
    /// leaves there) at once; a larger one when it is read a second time (among the last
    /// `RecentReads.capacity` blobs read once), and never one over a quarter of the budget.
    /// A blob read a single time (a download, a backup) then costs no copy and pushes out
    /// nothing that is read often. Each call counts as a read.
    func admits(_ image: StoredImage) -> Bool {
        let size = image.info.sizeBytes
        guard size <= Int64(cache.budgetBytes / 4) else { return false }
        if size <= Int64(Self.cacheOnPutBytes) { return true }
        return recentReads.withLock { $0.readAgain(image.cacheKey) }
    }

    /// Forgets which blobs were read once (a purge of the cache forgets them with it).
    public func forgetRecentReads() { recentReads.withLock { $0 = RecentReads() } }

    /// `offset` and the byte count of a read of `length` at `offset` (0: to the end), or the
    /// refusal that names what is wrong with them.
    func range(of image: StoredImage, offset: Int64, length: Int64) throws -> (offset: Int64, count: Int64) {
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
        return (offset, count)
    }

    /// `count` bytes at `offset` of the blob in a new array, read and verified on an I/O lane;
    /// a row without block checks gets the ones this read computed.
    private func readFromDisk(_ image: StoredImage, offset: Int64, count: Int64) async throws -> [UInt8] {
        let read = blobRead(image, offset: offset)
        let (bytes, computed) = try await readVerified(key: image.info.key) { () throws -> ([UInt8], BlockChecks?) in
            var computed: BlockChecks?
            let bytes = try [UInt8](unsafeUninitializedCapacity: Int(count)) { buffer, initialized in
                computed = try read(UnsafeMutableRawBufferPointer(buffer), nil)
                initialized = Int(count)
            }
            return (bytes, computed)
        }
        if let computed { storeBlockChecks(computed, of: image) }
        return bytes
    }

    /// The verified read of the blob's bytes from `offset` into a buffer, and into a copy
    /// (`BlobStore.read`).
    private func blobRead(
        _ image: StoredImage, offset: Int64
    ) -> @Sendable (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer?) throws -> BlockChecks? {
        let blobs = blobs
        return { target, copy in
            try blobs.read(
                key: image.info.key, size: image.info.sizeBytes, verification: image.verification,
                blockChecks: image.blockChecks, offset: offset, into: target, copy: copy)
        }
    }

    /// Gives a row without block checks the ones a read just computed (verified whole), so
    /// that its next reads check only the blocks they send. Not waited for: whatever runs on
    /// the index queue next runs after it.
    func storeBlockChecks(_ checks: BlockChecks, of image: StoredImage) {
        let logger = logger
        indexWriteLater({ try $0.setBlockChecks(checks, of: image) }) { error in
            logger.warning("could not store the block checks of image \(image.info.key): \(error)")
        }
    }

    /// `body` (a read) on an I/O lane, or a lane of `pool`, with its failure told as
    /// `readError` tells it.
    func readVerified<T: Sendable>(
        key: String, in pool: BlockingPool? = nil, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        do {
            return try await onLane(in: pool, body)
        } catch {
            var indexed = true
            if (error as? BlobIOError)?.code == ENOENT, let found = try? await indexRead({ try $0.get(key) != nil }) {
                indexed = found
            }
            throw readError(error, key: key) { [indexed] in indexed }
        }
    }

    /// What a failed read tells its caller: damage is DATA_LOSS (and logged); a missing file
    /// is NOT_FOUND when its image was deleted meanwhile (`stillIndexed` is false), else
    /// DATA_LOSS; another file error (EIO) UNAVAILABLE, saying nothing changed; anything else
    /// as it is.
    func readError(_ error: any Error, key: String, stillIndexed: () throws -> Bool) -> any Error {
        if let damage = error as? BlobDamage {
            logger.error("\(damage)")
            return ImageStoreError.damaged(damage.description)
        }
        if let error = error as? BlobIOError, error.code == ENOENT {
            // Deleted while this read was on its way: gone, not damaged.
            if (try? stillIndexed()) == false { return ImageStoreError.notFound("key \(key): no such image (deleted)") }
            return ImageStoreError.damaged("image \(error.path.split(separator: "/").last ?? "") is damaged on disk: its blob file is missing")
        }
        if let error = error as? BlobIOError { return Self.readFailure(error) }
        return error
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
        var query = ImageQuery(ownerKey: Self.canonicalOwner(ownerKey), kind: kind, mediaType: mediaType)
        query.limit = pageSize == 0 ? 100 : pageSize
        if !pageToken.isEmpty {
            guard let after = Int64(pageToken), after > 0 else {
                throw ImageStoreError.invalid("page_token \"\(pageToken)\" is not one this service issued")
            }
            query.afterSequence = after
        }
        let finalQuery = query
        let page = try await indexRead { try $0.list(finalQuery) }
        return (page.images, page.more ? String(page.last) : "")
    }

    // MARK: Delete

    /// Deletes an image and the images made from it; NOT_FOUND when it does not exist.
    public func delete(_ key: String) async throws -> [ImageInfo] {
        let key = try await info(key).key
        return try await deleteClaimed { try $0.deletion(of: key) }
    }

    /// Deletes the rows `find` names, then their files, holding the claim of every key from
    /// before the rows go until the files are gone: a put of one of those keys waits, so it can
    /// never be acknowledged and then lose its new file to this delete's unlink.
    ///
    /// - Parameter alongside: Written in the transaction that deletes the rows (the record of
    ///   a deleted owner), never on the reader connection that looks first.
    func deleteClaimed(
        alongside: (@Sendable (ImageIndex) throws -> Void)? = nil,
        _ find: @escaping @Sendable (ImageIndex) throws -> [ImageInfo]
    ) async throws -> [ImageInfo] {
        var keys = Set(try await indexRead { try find($0).map(\.key) })
        while true {
            await claims.claimForDelete(keys)
            // Every key claimed so far, kept outside the closure so that a failure releases them all.
            let held = Locked(keys)
            let outcome: (removed: [ImageInfo], busy: Set<String>)
            do {
                outcome = try await indexWrite { index in
                    while true {
                        let attempt = try index.delete(claimed: held.withLock { $0 }, alongside: alongside, find)
                        if attempt.unclaimed.isEmpty { return (attempt.removed, []) }
                        // Rows added since the look (a thumbnail just stored): claimed here when
                        // free; otherwise waited for with the rest, in key order.
                        guard self.claims.tryClaimForDelete(attempt.unclaimed) else { return ([], attempt.unclaimed) }
                        held.withLock { $0.formUnion(attempt.unclaimed) }
                    }
                }
            } catch {
                for key in held.withLock({ $0 }) { claims.release(key) }
                throw error
            }
            let claimed = held.withLock { $0 }
            if outcome.busy.isEmpty {
                defer { for key in claimed { claims.release(key) } }
                try await removeFiles(outcome.removed)
                return outcome.removed
            }
            for key in claimed { claims.release(key) }
            keys = claimed.union(outcome.busy)
        }
    }

    func removeFiles(_ removed: [ImageInfo]) async throws {
        guard !removed.isEmpty else { return }  // the cascade's usual case: the owner had none
        let blobs = blobs, hook = hooks.current.beforeRemovingFiles
        // The rows are gone first: a crash before the unlink leaves a file without a row, which
        // start-up moves to quarantine/.
        try await onDisk {
            hook?(removed.map(\.key))
            for image in removed { blobs.remove(key: image.key) }
        }
        for image in removed { cache.remove(prefix: image.key) }
    }
}

/// The blobs read once from disk lately, by cache key, oldest first out.
struct RecentReads {
    static let capacity = 4096
    private var keys = Set<String>()
    private var order: [String] = []
    private var next = 0

    /// Whether `key` was read before (and is then forgotten); otherwise it is remembered.
    mutating func readAgain(_ key: String) -> Bool {
        if keys.remove(key) != nil { return true }
        if order.count < Self.capacity {
            order.append(key)
        } else {
            keys.remove(order[next])
            order[next] = key
            next = (next + 1) % Self.capacity
        }
        keys.insert(key)
        return false
    }
}

/// Memory a read puts a blob's bytes in (the frame of a reply), and what keeps it alive.
public protocol ReadTarget: Sendable {
    /// Where the bytes go: exactly as many as were asked for.
    var bytes: UnsafeMutableRawBufferPointer { get }
}

/// What `cachedRead` found: the image's row, its `ImageInfo` encoded, and the bytes asked for.
public struct CachedImage: Sendable {
    public let image: StoredImage
    /// `image.info` in its wire encoding (made once, when the bytes were cached).
    public let encodedInfo: [UInt8]
    public let bytes: ArraySlice<UInt8>
}
