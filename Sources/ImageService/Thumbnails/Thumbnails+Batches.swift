import Proto

/// EnqueueThumbnails: a batch of `thumbnails` jobs for given images, for all, or for those
/// missing a size (the "create missing thumbnails" sweep).
extension Thumbnails {
    /// Images looked at per write: each page is one query and one transaction, so puts keep
    /// committing between pages of a sweep over a large library.
    static let thumbnailBatchPage = 500

    /// Enqueues one job per image (for all `sizes`, or with `missing_only` for the sizes it
    /// lacks), as one batch; answers what it did.
    func enqueue(_ request: EnqueueThumbnailsRequest) async throws -> EnqueueThumbnailsResponse {
        let sizes = try Self.batchSizes(request.sizes, defaults: defaultSizes)
        guard request.all != !request.keys.isEmpty else {
            throw ImageStoreError.invalid(
                request.all ? "give keys or all, not both (all is set and \(request.keys.count) keys are given)"
                    : "give the images: keys, or all = true for every JPEG, PNG and HEIC original and edit and every movie")
        }
        let keys = request.all ? nil : try await checkedThumbnailSources(request.keys)
        var response = EnqueueThumbnailsResponse()
        var after: Int64 = 0
        var batch: String?
        var offset = 0
        while true {
            let pageKeys = keys.map { Array($0[min(offset, $0.count)..<min(offset + Self.thumbnailBatchPage, $0.count)]) }
            if let pageKeys, pageKeys.isEmpty { break }
            let startAfter = keys == nil ? after : 0
            let now = clock.nowMilliseconds()
            let (page, last, batchID) = try await work.indexWrite { [batch] index in
                try index.write { () throws -> (EnqueueThumbnailsResponse, Int64?, String?) in
                    let sources = try index.thumbnailSources(
                        after: startAfter, limit: Self.thumbnailBatchPage, keys: pageKeys, sizes: sizes)
                    var page = EnqueueThumbnailsResponse()
                    var batch = batch
                    for source in sources {
                        let wanted = request.missingOnly ? sizes.filter { !source.has.contains($0) } : sizes
                        if wanted.isEmpty {
                            page.alreadyDone += 1
                            continue
                        }
                        if batch == nil { batch = try index.jobs.createBatch(queue: ThumbnailQueue.name, now: now) }
                        let enqueued = try index.jobs.enqueue(
                            queue: ThumbnailQueue.name,
                            payload: ThumbnailQueue.payload(source.key, generation: source.sequence, sizes: wanted),
                            dedupeKey: ThumbnailQueue.dedupeKey(source.key, generation: source.sequence, sizes: wanted),
                            batchID: batch, now: now)
                        if enqueued.created { page.enqueued += 1 } else { page.alreadyPending += 1 }
                    }
                    return (page, sources.last?.sequence, batch)
                }
            }
            batch = batchID
            response.enqueued += page.enqueued
            response.alreadyPending += page.alreadyPending
            response.alreadyDone += page.alreadyDone
            if page.enqueued > 0 { jobsWereCommitted() }
            if keys != nil {
                offset += Self.thumbnailBatchPage
            } else {
                guard let last, page.enqueued + page.alreadyPending + page.alreadyDone == Self.thumbnailBatchPage else { break }
                after = last
            }
        }
        response.batchId = batch ?? ""
        return response
    }

    /// The sizes of a request: its own (checked, sorted) or the service's.
    static func batchSizes(_ asked: [Int32], defaults: [Int]) throws(ImageStoreError) -> [Int] {
        guard !asked.isEmpty else {
            guard !defaults.isEmpty else {
                throw .failedPrecondition(
                    "this image service makes no thumbnails by default (--thumbnail-sizes is empty); give sizes")
            }
            return defaults.sorted()
        }
        let range = ThumbnailQueue.sizeRange
        var sizes: [Int] = []
        for size in asked {
            guard range.contains(Int(size)), !sizes.contains(Int(size)) else {
                throw .invalid("sizes: \(size) is not a new size in \(range.lowerBound)…\(range.upperBound)")
            }
            sizes.append(Int(size))
        }
        guard sizes.count <= ThumbnailQueue.maxSizes else {
            throw .invalid("sizes: \(sizes.count) given, at most \(ThumbnailQueue.maxSizes)")
        }
        return sizes.sorted()
    }

    /// The canonical keys of a request, once each; refuses keys that are not UUIDs (3), that
    /// name no image (5), or images thumbnails are not made from (9), naming the first few.
    private func checkedThumbnailSources(_ given: [String]) async throws -> [String] {
        var keys: [String] = []
        var seen = Set<String>()
        for text in given {
            guard let key = ImageStore.canonicalKey(text) else { throw ImageStoreError.invalid("keys: \"\(text)\" is not a UUID") }
            if seen.insert(key).inserted { keys.append(key) }
        }
        let unique = keys
        let found = try await work.indexRead { index in try unique.map { try index.get($0) } }
        var missing: [String] = [], unfit: [String] = []
        for (key, row) in zip(keys, found) {
            guard let info = row else { missing.append(key); continue }
            if !ThumbnailQueue.wants(info) { unfit.append("\(key) (\(info.kind), \(info.contentType))") }
        }
        func named(_ list: [String]) -> String {
            list.prefix(3).joined(separator: ", ") + (list.count > 3 ? " and \(list.count - 3) more" : "")
        }
        if !missing.isEmpty { throw ImageStoreError.notFound("keys: no such image: \(named(missing))") }
        if !unfit.isEmpty {
            throw ImageStoreError.failedPrecondition(
                "keys: thumbnails are made from JPEG, PNG and HEIC originals and edits and MP4, MOV, 3GP, Matroska and WebM movies only, not from \(named(unfit))")
        }
        return keys
    }
}
