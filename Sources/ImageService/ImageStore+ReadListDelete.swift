import Digest
import Foundation
import Proto
import Synchronization
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
        guard let image = try await onReader({ try $0.stored(canonical) }) else {
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
        let blobs = blobs, key = info.key
        // Blobs small enough to cache are read whole (and cached); a range of a larger one
        // reads, and verifies, only the blocks it touches.
        let readWhole = whole || size <= Int64(cache.budgetBytes / 4)
        let (from, length) = readWhole ? (0, size) : (offset, count)
        let (bytes, computed) = try await readVerified(key: key) { () throws -> ([UInt8], BlockChecks?) in
            var computed: BlockChecks?
            let bytes = try [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, initialized in
                computed = try blobs.read(
                    key: key, size: size, verification: image.verification, blockChecks: image.blockChecks, offset: from,
                    into: UnsafeMutableRawBufferPointer(buffer))
                initialized = Int(length)
            }
            return (bytes, computed)
        }
        if let computed { storeBlockChecks(computed, of: image) }
        guard readWhole else { return bytes }
        cache.insert(image.cacheKey, bytes, image: image, ticket: ticket)
        return whole ? bytes : Array(bytes[Int(offset)..<Int(offset + count)])
    }

    /// Gives a row without block checks the ones a read just computed (verified whole), so
    /// that its next reads check only the blocks they send. Not waited for: whatever runs on
    /// the index queue next runs after it.
    func storeBlockChecks(_ checks: BlockChecks, of image: StoredImage) {
        let logger = logger
        onIndexLater({ try $0.setBlockChecks(checks, of: image) }) { error in
            logger.warning("could not store the block checks of image \(image.info.key): \(error)")
        }
    }

    func readVerified<T: Sendable>(
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
        let key = try await info(key).key
        return try await deleteClaimed { try $0.deletion(of: key) }
    }

    /// Deletes every image of `ownerKey`; none is not an error (it is the item delete's cascade).
    public func deleteOwner(_ ownerKey: String) async throws -> [ImageInfo] {
        guard !ownerKey.isEmpty else { throw ImageStoreError.invalid("owner_key must not be empty") }
        return try await deleteClaimed { try $0.deletion(ofOwner: ownerKey) }
    }

    /// Deletes the rows `find` names, then their files, holding the claim of every key from
    /// before the rows go until the files are gone: a put of one of those keys waits, so it can
    /// never be acknowledged and then lose its new file to this delete's unlink.
    private func deleteClaimed(_ find: @escaping @Sendable (ImageIndex) throws -> [ImageInfo]) async throws -> [ImageInfo] {
        var keys = Set(try await onReader { try find($0).map(\.key) })
        while true {
            await claimForDelete(keys)
            // Every key claimed so far, kept outside the closure so that a failure releases them all.
            let held = Mutex(keys)
            let outcome: (removed: [ImageInfo], busy: Set<String>)
            do {
                outcome = try await onIndex { index in
                    while true {
                        let attempt = try index.delete(claimed: held.withLock { $0 }, find)
                        if attempt.unclaimed.isEmpty { return (attempt.removed, []) }
                        // Rows added since the look (a thumbnail just stored): claimed here when
                        // free; otherwise waited for with the rest, in key order.
                        guard self.tryClaimForDelete(attempt.unclaimed) else { return ([], attempt.unclaimed) }
                        held.withLock { $0.formUnion(attempt.unclaimed) }
                    }
                }
            } catch {
                for key in held.withLock({ $0 }) { release(key) }
                throw error
            }
            let claimed = held.withLock { $0 }
            if outcome.busy.isEmpty {
                defer { for key in claimed { release(key) } }
                try await removeFiles(outcome.removed)
                return outcome.removed
            }
            for key in claimed { release(key) }
            keys = claimed.union(outcome.busy)
        }
    }

    func removeFiles(_ removed: [ImageInfo]) async throws {
        let blobs = blobs, hook = hooks.current.beforeRemovingFiles
        // The rows are gone first: a crash before the unlink leaves a file without a row, which
        // start-up moves to quarantine/.
        try await onIO {
            hook?(removed.map(\.key))
            for image in removed { blobs.remove(key: image.key) }
        }
        for image in removed { cache.remove(prefix: image.key) }
    }
}

/// What `cachedRead` found: the image's row, its `ImageInfo` encoded, and the bytes asked for.
public struct CachedImage: Sendable {
    public let image: StoredImage
    /// `image.info` in its wire encoding (made once, when the bytes were cached).
    public let encodedInfo: [UInt8]
    public let bytes: ArraySlice<UInt8>
}
