import Digest
import Foundation
import Proto
import RPC
import WorkerRuntime

/// The calls a capture makes to item-service and image-service.
extension CaptureJobHandler {
    func item(_ key: String) async throws -> Item {
        var request = GetItemRequest()
        request.key = key
        do {
            return try await items.client.call(ItemServiceRPC.getItem, request)
        } catch {
            if error.code == .notFound { throw RPCError.notFound("item \(key) was deleted before its capture ran") }
            throw error
        }
    }

    /// Whether the item is still there (a failure to ask says yes: keep what was stored).
    func itemExists(_ key: String) async throws -> Bool {
        var request = GetItemRequest()
        request.key = key
        do {
            _ = try await items.client.call(ItemServiceRPC.getItem, request)
            return true
        } catch {
            return error.code != .notFound
        }
    }

    /// The key of the item's photo whose bytes have `checksum`, if any (one StatImage per photo),
    /// not counting `except` (the job's own images, the upload it was given).
    func attachedPhoto(withChecksum checksum: String, of item: Item, except: [String]) async throws -> String? {
        guard !checksum.isEmpty else { return nil }
        for key in item.photoKeys where !except.contains(key) {
            guard let info = try? await stat(key) else { continue }
            if info.checksum == checksum { return key }
        }
        return nil
    }

    /// What the image service says of image `key`; nil when it has no such image.
    func stat(_ key: String) async throws(RPCError) -> ImageInfo? {
        var stat = StatImageRequest()
        stat.key = key
        do {
            return try await images.client.call(ImageServiceRPC.statImage, stat)
        } catch {
            if error.code == .notFound { return nil }
            throw error
        }
    }

    /// An image's bytes, all of them.
    func read(_ key: String) async throws -> [UInt8] {
        guard let bytes = try await ImageReader(connection: images).read(key) else {
            throw RPCError.notFound("image \(key) was deleted while its capture ran")
        }
        return bytes
    }

    /// An image's first `count` bytes (fewer when it is smaller).
    func read(_ key: String, count: Int) async throws -> [UInt8] {
        var get = GetImageRequest()
        get.key = key
        get.length = Int64(count)
        do {
            return try await images.client.call(ImageServiceRPC.getImage, get, options: CallOptions(timeoutMilliseconds: 30_000)).data
        } catch {
            if error.code == .notFound { throw RPCError.notFound("image \(key) was deleted while its capture ran") }
            throw error
        }
    }

    /// Stores a source's bytes as the ORIGINAL under `key`: from memory, or a library file a
    /// piece at a time (an upload's own image is stored already: nothing to do).
    func storeOriginal(_ source: Obtained, checksum: String, key: String, owner: String, contentType: String) async throws {
        switch source.content {
        case .bytes(let bytes):
            try await put(bytes, checksum: checksum, key: key, owner: owner, kind: .original, parent: "", contentType: contentType)
        case .file(let file):
            let begin = beginUpload(key: key, owner: owner, kind: .original, parent: "", contentType: contentType, size: file.size, checksum: checksum)
            try await upload(begin, changed: file.changed) { chunk, send in try await file.forEachPiece(of: chunk, send) }
        case .stored:
            return
        }
    }

    /// Stores `data`, whose SHA-256 is `checksum`, under `key`: one PutImage (which answers the
    /// image an earlier attempt stored under it), or a chunked upload for what is larger.
    func put(
        _ data: [UInt8], checksum: String, key: String, owner: String, kind: ImageKind, parent: String, contentType: String
    ) async throws {
        if data.count <= Self.maxPutBytes {
            var put = PutImageRequest()
            (put.key, put.ownerKey, put.kind, put.parentKey, put.contentType, put.data) = (key, owner, kind, parent, contentType, data)
            let stored = try await images.client.call(ImageServiceRPC.putImage, put, options: CallOptions(timeoutMilliseconds: 60_000))
            // A key stored already is answered with what is there: take it up only when it is
            // these bytes.
            try Self.sameContent(stored, as: checksum, key: key)
            return
        }
        let begin = beginUpload(
            key: key, owner: owner, kind: kind, parent: parent, contentType: contentType, size: data.count, checksum: checksum)
        try await upload(begin, changed: nil) { chunk, send in
            for offset in stride(from: 0, to: data.count, by: chunk) { try await send(Array(data[offset..<min(data.count, offset + chunk)])) }
        }
    }

    func beginUpload(key: String, owner: String, kind: ImageKind, parent: String, contentType: String, size: Int, checksum: String) -> BeginUploadRequest {
        var begin = BeginUploadRequest()
        (begin.key, begin.ownerKey, begin.kind, begin.parentKey, begin.contentType) = (key, owner, kind, parent, contentType)
        (begin.totalSize, begin.checksum) = (Int64(size), checksum)
        return begin
    }

    /// A chunked upload of what `pieces` sends, in chunks of the size it is given (at most
    /// `pieceBytes`). An image under the key already (an earlier attempt of the job committed
    /// it, then died) is taken as stored: nothing is sent. A checksum that does not match at
    /// commit is `changed` (bytes read again from a file that changed meanwhile), when given.
    func upload(
        _ begin: BeginUploadRequest, changed: RPCError?,
        pieces: (_ chunk: Int, _ send: ([UInt8]) async throws -> Void) async throws -> Void
    ) async throws {
        let upload: BeginUploadResponse
        do {
            upload = try await images.client.call(ImageServiceRPC.beginUpload, begin)
        } catch {
            if error.code == .alreadyExists { return try await takeUp(begin) }
            throw error
        }
        do {
            var offset: Int64 = 0
            try await pieces(max(64 << 10, min(Int(upload.maxChunkBytes), Self.pieceBytes))) { data in
                var append = AppendUploadRequest()
                append.uploadId = upload.uploadId
                append.offset = offset
                append.data = data
                _ = try await images.client.call(ImageServiceRPC.appendUpload, append, options: CallOptions(timeoutMilliseconds: 60_000))
                offset += Int64(data.count)
            }
            var commit = CommitUploadRequest()
            commit.uploadId = upload.uploadId
            do {
                _ = try await images.client.call(ImageServiceRPC.commitUpload, commit, options: CallOptions(timeoutMilliseconds: 120_000))
            } catch {
                // Committed by an earlier attempt (still running when its lease ran out) meanwhile.
                if error.code == .alreadyExists { return try await takeUp(begin) }
                if let changed, error.code == .invalidArgument, error.message.contains("does not match the received data") { throw changed }
                throw error
            }
        } catch {
            // Its staging file goes now rather than at its expiry (a refused commit discards it itself).
            var abort = AbortUploadRequest()
            abort.uploadId = upload.uploadId
            _ = try? await images.client.call(ImageServiceRPC.abortUpload, abort)
            throw error
        }
    }

    /// Takes up the image an earlier attempt of the job stored under `begin.key`: it must be
    /// there (else the job runs again), of the owner and kind this one would store.
    func takeUp(_ begin: BeginUploadRequest) async throws {
        guard let info = try await stat(begin.key) else {
            throw RPCError.aborted("image \(begin.key) was deleted as this capture stored it; it runs again")
        }
        guard info.ownerKey == begin.ownerKey, info.kind == begin.kind else {
            throw RPCError.failedPrecondition(
                "image \(begin.key) is stored already with owner \(info.ownerKey) and kind \(info.kind.rawValue), not as this capture's (owner \(begin.ownerKey), kind \(begin.kind.rawValue))")
        }
        if !begin.checksum.isEmpty { try Self.sameContent(info, as: begin.checksum, key: begin.key) }
    }

    /// What is stored under one of the job's keys must be the bytes this attempt read: other
    /// bytes there (an earlier attempt read a file that changed since, or a key that knows the
    /// job's key naming stored something of its own first) are never attached as this capture.
    static func sameContent(_ stored: ImageInfo, as checksum: String, key: String) throws(RPCError) {
        guard stored.checksum != checksum else { return }
        throw RPCError.failedPrecondition(
            "image \(key), under this capture's own key, is stored already with other bytes (\(stored.checksum)) than this capture read (\(checksum)): an earlier attempt read a file that has changed since, or something else stored under the job's key; nothing of it is attached, capture again")
    }

    /// Attaches `image` to `item` (as read at the start of the attempt), adding it to
    /// `attached` when the item did not hold it then and does now.
    /// The item answered is as the attach left it: without `image` when the item holds its
    /// content under another key.
    @discardableResult
    func attach(_ image: String, to item: Item, primary: Bool, recording attached: inout [String]) async throws -> Item {
        var attach = AttachPhotoRequest()
        attach.itemKey = item.key
        attach.imageKey = image
        attach.makePrimary = primary
        let after = try await items.client.call(ItemServiceRPC.attachPhoto, attach)
        if !item.photoKeys.contains(image) && after.photoKeys.contains(image) { attached.append(image) }
        return after
    }

    func detach(_ image: String, from item: String) async throws {
        var detach = DetachPhotoRequest()
        detach.itemKey = item
        detach.imageKey = image
        _ = try await items.client.call(ItemServiceRPC.detachPhoto, detach)
    }

    func deleteImage(_ key: String) async throws {
        var delete = DeleteImageRequest()
        delete.key = key
        do {
            _ = try await images.client.call(ImageServiceRPC.deleteImage, delete)
        } catch {
            if error.code != .notFound { throw error }
        }
    }

    /// The key of what a job stores in a role ("original", "edited"): a UUID from the job and
    /// the item, the same at every attempt of the job.
    func storedKey(_ job: Job, _ role: String) -> String {
        NameBasedUUID.make(job.captureKeyName(role))
    }
}
