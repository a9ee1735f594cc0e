import Foundation
import JobQueue
import Media
import Proto
import Locking
import Runtime

/// The image store's side of the `thumbnails` queue: storing what a worker completes a job
/// with, enqueueing batches (EnqueueThumbnails, `Thumbnails+Batches`), and waking the Leases
/// that wait once a commit enqueued jobs. The store holds one and forwards to it.
final class Thumbnails: Sendable {
    /// The sizes each stored JPEG gets a thumbnail job for, and EnqueueThumbnails' default.
    let defaultSizes: [Int]
    /// The `thumbnails` queue in images.db, with the retention of the store's limits.
    let queue: JobQueueConfiguration
    /// Called once a row that enqueued a thumbnail job has committed (wakes waiting Leases).
    private let jobsCommitted = Locked<(@Sendable () -> Void)?>(nil)
    let work: StoreWork
    let blobs: BlobStore
    let cache: ImageCache
    /// Thumbnails are stored under claimed keys, and the ones they replace deleted under theirs.
    let claims: KeyClaims
    let limits: ImageStoreLimits
    let clock: any WallClock
    let logger: Logger

    init(
        defaultSizes: [Int], queue: JobQueueConfiguration, work: StoreWork, blobs: BlobStore, cache: ImageCache,
        claims: KeyClaims, limits: ImageStoreLimits, clock: any WallClock, logger: Logger
    ) {
        self.defaultSizes = defaultSizes
        self.queue = queue
        self.work = work
        self.blobs = blobs
        self.cache = cache
        self.claims = claims
        self.limits = limits
        self.clock = clock
        self.logger = logger
    }

    /// Sets what a commit that enqueued thumbnail jobs calls (the job service's wake-up of
    /// its Leases); nil lets it go (the store's `close()`: it keeps the store, a cycle otherwise).
    func tellCommittedJobs(to wake: (@Sendable () -> Void)?) {
        jobsCommitted.withLock { $0 = wake }
    }

    /// After a commit that enqueued thumbnail jobs: wakes the Leases waiting for them.
    func jobsWereCommitted() {
        jobsCommitted.withLock { $0 }?()
    }

    /// After the commit of `info`'s row: wakes the Leases waiting for its thumbnail job.
    func announceJob(for info: ImageInfo) {
        if ThumbnailQueue.wants(info) { jobsWereCommitted() }
    }

    /// A thumbnail a worker sends may be at most this large (a 1024-pixel JPEG is ~200 KB).
    static let maxThumbnailBytes = 16 << 20

    /// The staging of a `thumbnails` job's completion (see `StagedCompletion`).
    ///
    /// Before the transaction: the result is checked (a `ThumbnailResult` of sizes the job asked
    /// for, each a JPEG no larger than its size), and each thumbnail written durably under a new
    /// key (fsynced file, rename, folder fsync), claimed so that no delete can miss it. In the
    /// transaction, once the lease is known to be current: the THUMBNAIL rows are added, and
    /// the older thumbnails of the same sizes deleted; if the image was deleted meanwhile
    /// nothing is added. After: the files of a transaction that did not commit (a late
    /// worker's, or a repeat) are removed, and the replaced thumbnails' files too. A job for an
    /// image that is no longer the one stored under its key (deleted, or deleted and stored
    /// again: another generation, which has a job of its own) stores nothing, before the files
    /// and again in the transaction.
    ///
    /// A crash after the files and before the commit leaves files without rows, which the next
    /// start quarantines (never deletes), as for any put cut short.
    func stage(_ request: CompleteRequest, publish: @escaping ImageStore.ImagePublish) async throws -> StagedCompletion<ImageIndex> {
        var lookUp = GetJobRequest()
        lookUp.queue = request.queue
        lookUp.jobId = request.jobId
        let get = lookUp
        let job = try await work.indexRead { try $0.jobs.job(get) }
        // Not running under this lease (a late worker, or a repeat of a completion): the
        // transaction refuses it or answers the repeat, and nothing is written for it.
        let untouched = StagedCompletion<ImageIndex>(effect: { _, _, result in result })
        guard job.state == .running, !request.leaseId.isEmpty, job.leaseId == request.leaseId,
              let payload = try? ThumbnailJob(serializedBytes: job.payload)
        else { return untouched }
        let result: ThumbnailResult
        do {
            result = try ThumbnailResult(serializedBytes: request.result)
        } catch {
            throw ImageStoreError.invalid("result of job \(job.jobId) is not a ThumbnailResult (\(error))")
        }
        try Self.check(result, asked: payload.sizes.map(Int.init), job: job.jobId)
        let parentKey = payload.imageKey, generation = payload.imageGeneration
        let nothingStored = ThumbnailResult().serializedBytes()
        let sizes = result.thumbnails.map { Int($0.size) }
        // The image and the thumbnails these replace, in one read.
        let (found, replaced) = try await work.indexRead { index -> (ImageInfo?, [ImageInfo]) in
            guard try index.generation(of: parentKey) == generation, let parent = try index.get(parentKey) else { return (nil, []) }
            return (parent, try index.thumbnails(of: parentKey, sizes: sizes))
        }
        guard let parent = found else {
            // Deleted since the job was queued, or stored again (the new image has a job of its
            // own): nothing to store.
            return StagedCompletion(effect: { _, _, _ in nothingStored })
        }
        // Deletes first (they may wait), then the new keys (fresh UUIDs: they never wait).
        await claims.claimForDelete(Set(replaced.map(\.key)))
        let made = result.thumbnails.map { thumbnail in (thumbnail, Self.thumbnailKey(of: parentKey)) }
        for (_, key) in made { try await claims.claim(key) }
        @Sendable func releaseAll() {
            for (_, key) in made { claims.release(key) }
            for old in replaced { claims.release(old.key) }
        }
        let stored: [(image: StoredImage, size: Int)]
        do {
            stored = try await write(made, of: parent, job: job.jobId)
        } catch {
            releaseAll()
            throw error
        }

        let removed = Locked<[ImageInfo]?>(nil)
        let blobs = blobs, cache = cache, logger = logger
        return StagedCompletion(effect: { index, _, _ in
            // The image was deleted (and maybe stored again) while the thumbnails were written
            // (its delete waited for nothing of theirs: they had no rows yet), or its owner was:
            // store nothing.
            guard try index.generation(of: parentKey) == generation else { return nothingStored }
            do {
                let gone = try index.write { try index.replaceThumbnails(replaced, with: stored) }
                removed.withLock { $0 = gone }
            } catch {
                // Its owner was deleted (the cascade will remove the image too): store nothing.
                guard let refused = error as? ImageStoreError, refused.rpcStatus == .failedPrecondition || refused.rpcStatus == .notFound
                else { throw error }
                logger.info("thumbnails of image \(parentKey) not stored: \(refused)")
                return nothingStored
            }
            var kept = ThumbnailResult()
            kept.thumbnails = stored.map { image, size in
                var thumbnail = Thumbnail()
                thumbnail.size = Int32(size)
                thumbnail.width = image.info.width
                thumbnail.height = image.info.height
                thumbnail.key = image.info.key
                return thumbnail
            }
            return kept.serializedBytes()
        }, finish: { committed in
            defer { releaseAll() }
            guard committed, let gone = removed.withLock({ $0 }) else {
                for (image, _) in stored { blobs.remove(key: image.info.key) }
                return
            }
            for old in gone {
                cache.remove(prefix: old.key)
                blobs.remove(key: old.key)
                publish(EventTopic.imageDeleted, old)
            }
            for (image, _) in stored {
                if let data = made.first(where: { $0.1 == image.info.key })?.0.data, data.count <= ImageStore.cacheOnPutBytes {
                    cache.insert(image.cacheKey, data, image: image, ticket: cache.removalTicket())
                }
                logger.debug("thumbnail \(image.info.key) of image \(parentKey) stored (\(image.info.width)×\(image.info.height))")
                publish(EventTopic.imageStored, image.info)
            }
        })
    }

    /// Refuses a result that is not thumbnails of the sizes asked for, naming what is wrong.
    static func check(_ result: ThumbnailResult, asked sizes: [Int], job: String) throws(ImageStoreError) {
        var seen = Set<Int>()
        for (index, thumbnail) in result.thumbnails.enumerated() {
            let what = "thumbnails[\(index)] (size \(thumbnail.size)) of job \(job)"
            guard sizes.contains(Int(thumbnail.size)) else {
                throw .invalid("\(what): the job asked for sizes \(sizes.map(String.init).joined(separator: ","))")
            }
            guard seen.insert(Int(thumbnail.size)).inserted else { throw .invalid("\(what): a second thumbnail of that size") }
            guard !thumbnail.data.isEmpty else { throw .invalid("\(what): data is empty") }
            guard thumbnail.data.count <= maxThumbnailBytes else {
                throw .invalid("\(what): \(thumbnail.data.count) bytes, over the \(maxThumbnailBytes) a thumbnail may be")
            }
        }
    }

    /// Checks each thumbnail as a whole JPEG no larger than its size, upright, and writes it
    /// durably under its claimed key; on failure removes what it wrote.
    ///
    /// The files are written at once on several I/O lanes (their fsyncs share the file system's
    /// journal commits), and their keys share the parent's fan-out folder (`thumbnailKey`), so
    /// one folder fsync makes every rename durable.
    private func write(
        _ made: [(Thumbnail, String)], of parent: ImageInfo, job: String
    ) async throws -> [(image: StoredImage, size: Int)] {
        let limits = limits, blobs = blobs
        let media = try await work.onDisk {
            try made.map { thumbnail, _ in
                let size = Int(thumbnail.size)
                let what = "the thumbnail of size \(size) of job \(job)"
                let media: SniffedMedia
                do {
                    media = try thumbnail.data.withUnsafeBytes { buffer in
                        try ImageStore.classifyJPEG(buffer, maxPixels: limits.maxPixels, maxDecodeBytes: limits.maxRenditionSourceBytes)
                    }
                } catch {
                    throw ImageStoreError.invalid("\(what) is not a whole JPEG: \(error)")
                }
                guard max(media.width, media.height) <= size else {
                    throw ImageStoreError.invalid("\(what) is \(media.width)×\(media.height), larger than its size")
                }
                guard media.orientation <= 1 else {
                    throw ImageStoreError.invalid("\(what) has EXIF orientation \(media.orientation); thumbnails are stored upright")
                }
                return media
            }
        }
        let written = await withTaskGroup(of: (Int, Result<(path: String, digests: ImageStore.Digests), any Error>).self) { group in
            for (index, (thumbnail, key)) in made.enumerated() {
                group.addTask { [work, blobs] in
                    do {
                        return (index, .success(try await work.onDisk {
                            try ImageStore.writeTemporary(thumbnail.data, key: key, blobs: blobs, digests: work.digests)
                        }))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [Result<(path: String, digests: ImageStore.Digests), any Error>?](repeating: nil, count: made.count)
            for await (index, result) in group { results[index] = result }
            return results.map { $0! }
        }
        let temporaries = written.compactMap { try? $0.get().path }
        do {
            let files = try written.map { try $0.get() }
            try await work.onDisk {
                var renamed: [String] = []
                do {
                    for ((_, key), file) in zip(made, files) {
                        try blobs.rename(temporary: file.path, key: key)
                        renamed.append(key)
                    }
                    for folder in Set(made.map { blobs.folder(of: $0.1) }) { try blobs.syncFolder(folder) }
                } catch {
                    for key in renamed { blobs.remove(key: key) }
                    throw error
                }
            }
            return made.indices.map { index -> (image: StoredImage, size: Int) in
                let (thumbnail, key) = made[index], media = media[index], file = files[index]
                let new = NewImage(ownerKey: parent.ownerKey, kind: .thumbnail, parentKey: parent.key, key: key)
                var info = ImageStore.makeInfo(
                    new, media: media, size: Int64(thumbnail.data.count), checksum: file.digests.checksum, createdAtMs: clock.nowMilliseconds())
                // A thumbnail keeps no EXIF: it was taken when its image was (as its row will say).
                if info.takenAt.isEmpty { info.takenAt = parent.takenAt }
                return (StoredImage(info: info, contentCheck: file.digests.check, blockChecks: file.digests.blocks), Int(thumbnail.size))
            }
        } catch {
            for path in temporaries { unlink(path) }
            throw error
        }
    }

    /// A new key for a thumbnail of `parent`: a random UUID whose first byte is the parent's, so
    /// an image's thumbnails share its fan-out folder (120 random bits remain).
    static func thumbnailKey(of parent: String) -> String {
        String(parent.prefix(2)) + UUID().uuidString.lowercased().dropFirst(2)
    }
}
