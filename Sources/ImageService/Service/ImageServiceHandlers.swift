import Backup
import Digest
import Proto
import RPC
import Runtime

/// The ImageService methods: decode → store → reply, with events for stored and deleted images.
enum ImageServiceHandlers {
    /// Publishes an `ImageEvent` for an image on `host`'s event socket.
    /// It holds `host` weakly: the host's server keeps the handlers that keep this closure, and a
    /// strong reference would make a cycle that kept the whole stopped composition (store,
    /// server, queue) in memory (found by LeakSanitizer, `ops/test --sanitize address`).
    static func publisher(host: ServiceHost, clock: any WallClock) -> ImageStore.ImagePublish {
        { [weak host] topic, info in
            guard let host else { return }
            var event = ImageEvent()
            event.key = info.key
            event.info = info
            event.atMs = clock.nowMilliseconds()
            host.publish(topic: topic, event)
        }
    }

    /// A worker key stores only what a capture job makes: an original or edited image under a
    /// key named by its job (`NameBasedUUID`), never a thumbnail (those come with the thumbnail
    /// job's Complete, for the job's own image) nor a key of its choosing.
    static func checkWorkerStores(_ context: RPCContext, kind: ImageKind, key: String) throws {
        guard context.callerIsWorker else { return }
        if kind == .thumbnail {
            throw RPCError.permissionDenied("a worker key stores no thumbnails: they are stored with the Complete of the thumbnail job")
        }
        guard NameBasedUUID.isOne(key) else {
            throw RPCError.permissionDenied(
                "a worker key stores images only under keys named by a capture job; \(key.isEmpty ? "no key was given" : "\(key) is not one")")
        }
    }

    /// Registers every implemented ImageService method on `host`.
    /// - Parameter backups: Open backups; while one is, deletes are refused (14) until it ends.
    static func register(on host: ServiceHost, store: ImageStore, replyLimit: Int, backups: BackupSnapshots? = nil) {
        let server = host.server
        let publish = publisher(host: host, clock: store.clock)

        // The photo is stored from the request frame it arrived in (field 2, data): no copy.
        server.register(ImageServiceRPC.putImage, largeBytesField: PutImageRequest.dataField) { request, data, context in
            try checkWorkerStores(context, kind: request.kind, key: request.key)
            let bytes: any BlobBytes = data ?? request.data
            let (info, created) = try await store.put(
                bytes,
                NewImage(
                    ownerKey: request.ownerKey, contentType: request.contentType, kind: request.kind,
                    parentKey: request.parentKey, key: request.key),
                abandoned: { context.deadlinePassed })
            if created { publish(EventTopic.imageStored, info) }
            return info
        }
        server.register(ImageServiceRPC.beginUpload) { request, context in
            if request.resumeUploadId.isEmpty { try checkWorkerStores(context, kind: request.kind, key: request.key) }
            // resume_upload_id: every other field is ignored.
            let ticket = request.resumeUploadId.isEmpty
                ? try await store.beginUpload(
                    NewImage(
                        ownerKey: request.ownerKey, contentType: request.contentType, kind: request.kind,
                        parentKey: request.parentKey, key: request.key, mediaType: request.mediaType),
                    totalSize: request.totalSize, checksum: request.checksum, peer: context.peer)
                : try await store.resumeUpload(request.resumeUploadId)
            var response = BeginUploadResponse()
            response.uploadId = ticket.uploadID
            response.expiresAtMs = ticket.expiresAtMs
            response.maxChunkBytes = Int32(clamping: ticket.maxChunkBytes)
            response.receivedBytes = ticket.receivedBytes
            return response
        }
        // A chunk is staged from the request frame it arrived in (field 3, data): no copy.
        server.register(ImageServiceRPC.appendUpload, largeBytesField: AppendUploadRequest.dataField) { request, data, _ in
            var response = AppendUploadResponse()
            let bytes: any BlobBytes = data ?? request.data
            response.receivedBytes = try await store.appendUpload(
                request.uploadId, offset: request.offset, data: bytes)
            return response
        }
        server.register(ImageServiceRPC.commitUpload) { request, _ in
            let info = try await store.commitUpload(request.uploadId, checksum: request.checksum)
            publish(EventTopic.imageStored, info)
            return info
        }
        server.register(ImageServiceRPC.enqueueThumbnails) { request, _ in try await store.enqueueThumbnails(request) }
        server.register(ImageServiceRPC.abortUpload) { request, _ in
            try await store.abortUpload(request.uploadId)
            return AbortUploadResponse()
        }
        // GetImage answers with its encoding written directly into the reply's frame: a cached
        // blob is copied there once, a blob from disk is read there (and verified) in place.
        let getImage = ProtoMethod<GetImageRequest, EncodedReply<GetImageResponse>>(
            service: ImageServiceRPC.serviceName, name: "GetImage", isReadOnly: ImageServiceRPC.getImage.isReadOnly,
            callers: ImageServiceRPC.getImage.callers)
        // A cached image is answered on the server's I/O thread (no hop to the task pool and no
        // index lookup) when its reply is small enough not to hold that thread up; a larger
        // one by a task, which takes over what the cache had (one lookup, one hit counted);
        // the rest on an I/O lane, from the index lookup to the reply (no other thread woken).
        server.registerDeferredEncoded(getImage) { request, _, reply in
            let hit = store.cachedRead(request.key, offset: request.offset, length: request.length)
            if let hit, hit.bytes.count <= min(replyLimit, inlineReplyBytes) {
                reply(.success(MessageBody(encoding: EncodedReply<GetImageResponse>(message: hit.encodedInfo, data: hit.bytes))))
                return
            }
            if let hit, hit.bytes.count <= replyLimit {
                Task(priority: RPCServer.handlerPriority) {
                    reply(.success(MessageBody(encoding: EncodedReply<GetImageResponse>(message: hit.encodedInfo, data: hit.bytes))))
                }
                return
            }
            store.read(
                key: request.key, offset: request.offset, length: request.length,
                accept: { try Self.checkReplyLimit($0.info, request, replyLimit) },
                into: { image, count in
                    FramedRead(head: EncodedReply<GetImageResponse>.head(message: image.info.serializedBytes(), dataCount: count), dataCount: count)
                },
                done: { result in
                    reply(result.map { MessageBody(frame: $0.frame) })
                })
        }
        server.register(ImageServiceRPC.statImage) { request, _ in
            try await store.info(request.key)
        }
        server.register(ImageServiceRPC.listImages) { request, _ in
            let page = try await store.list(
                ownerKey: request.ownerKey, kind: request.kind, mediaType: request.mediaType,
                pageSize: Int(request.pageSize), pageToken: request.pageToken)
            var response = ListImagesResponse()
            response.images = page.images
            response.nextPageToken = page.next
            return response
        }
        server.register(ImageServiceRPC.deleteImage) { request, context in
            if context.callerIsWorker && !NameBasedUUID.isOne(request.key) {
                throw RPCError.permissionDenied(
                    "a worker key deletes only images a capture job stored (keys named by their job); \(request.key) is not one")
            }
            if let refusal = backups?.deleteRefusal() { throw refusal }
            for info in try await store.delete(request.key) { publish(EventTopic.imageDeleted, info) }
            return DeleteImageResponse()
        }
        server.register(ImageServiceRPC.deleteImagesForOwner) { request, _ in
            if let refusal = backups?.deleteRefusal() { throw refusal }
            let removed = try await store.deleteForOwner(
                request.ownerKey, attachedKeys: request.attachedKeys, ownerDeleted: request.ownerDeleted)
            for info in removed { publish(EventTopic.imageDeleted, info) }
            var response = DeleteImagesForOwnerResponse()
            response.deletedCount = Int64(removed.count)
            // The record went in with the delete (deleteForOwner returns only then): the item
            // cascade keeps its delivery when an older image service leaves this unset.
            response.ownerDeletedRecorded = request.ownerDeleted
            return response
        }
        server.register(ImageServiceRPC.getRendition) { request, context in
            let (info, data, source) = try await store.rendition(
                request.key, width: Int(request.width), height: Int(request.height), mode: request.mode,
                abandoned: { context.deadlinePassed })
            var response = GetRenditionResponse()
            response.info = info
            response.data = data
            // The image the rendition was made from, so a caller needs no StatImage beside it.
            response.source = source
            return response
        }
        server.register(ImageServiceRPC.stats) { _, _ in
            // What the store's start found (it starts before the server).
            let recovery = store.recovery
            var response = ImageStatsResponse()
            response.quarantinedBlobs = Int64(recovery.quarantined)
            response.quarantineFolder = recovery.quarantineFolder
            response.missingBlobs = Int64(recovery.missingFiles.count)
            response.finishedPuts = Int64(recovery.finishedPuts)
            response.removedLeftovers = Int64(recovery.leftovers)
            return response
        }
        server.register(ImageServiceRPC.cacheStats) { _, _ in
            cacheStatsResponse(store.cache.statistics)
        }
        server.register(ImageServiceRPC.purgeCache) { request, _ in
            let level: PressureLevel
            switch request.level {
            case .warning: level = .warning
            case .critical, .unspecified: level = .critical
            default: throw RPCError.invalidArgument("level \(request.level.rawValue) is not WARNING or CRITICAL")
            }
            let result = store.cache.purge(level, reason: "manual")
            store.forgetRecentReads()
            var response = PurgeCacheResponse()
            response.freedBytes = Int64(result.freedBytes)
            response.entries = Int64(result.entries)
            response.bytes = Int64(result.bytes)
            return response
        }
    }

    /// The largest cached GetImage reply answered on the I/O thread itself (copying more would
    /// hold up every other call).
    static let inlineReplyBytes = 4 << 20

    /// RESOURCE_EXHAUSTED when what `request` asks of the image would not fit in a reply;
    /// offsets outside the blob are left to the store's read, which names the problem.
    static func checkReplyLimit(_ info: ImageInfo, _ request: GetImageRequest, _ replyLimit: Int) throws {
        let inside = (0..<info.sizeBytes).contains(request.offset)
        let length = request.length == 0 && inside ? info.sizeBytes - request.offset : request.length
        if inside, length >= 0, length <= info.sizeBytes - request.offset, length > Int64(replyLimit) {
            throw ImageStoreError.tooLarge(
                "image \(info.key) is \(info.sizeBytes) bytes; a reply holds at most \(replyLimit): read it in ranges (offset, length ≤ \(replyLimit))")
        }
    }

    static func cacheStatsResponse(_ stats: CacheStatistics) -> CacheStatsResponse {
        var response = CacheStatsResponse()
        response.entries = Int64(stats.entries)
        response.bytes = Int64(stats.bytes)
        response.budgetBytes = Int64(stats.budgetBytes)
        response.hits = stats.hits
        response.misses = stats.misses
        response.evictions = stats.evictions
        response.purges = stats.purges.sorted { $0.key < $1.key }.map {
            var count = PurgeCount()
            count.reason = $0.key
            count.count = $0.value
            return count
        }
        return response
    }
}
