import Digest
import Foundation
import JPEG
import Media
import Proto
import RPC
import Runtime
import WorkerRuntime

/// One job of the `capture` queue: obtains the photo or movie from its source, validates it,
/// stores the ORIGINAL untouched, applies the edit and stores it as EDITED, attaches both to
/// the item, and answers the `CaptureOutcome` the job is completed with.
///
/// - The same bytes already attached to the item are not stored again: the outcome says
///   duplicate and names that photo (its edit, if one was asked, is still made from it).
/// - What is stored is keyed by the job (`storedKey`), so an attempt that runs again after a
///   crash puts the same keys and takes up what the earlier one stored (a put answers the image
///   there, a chunked upload finds it there and sends nothing) and attached.
/// - An item deleted meanwhile: what this job stored is deleted, and the job fails NOT_FOUND.
/// - Every refusal fails the job permanently, with `NAME (code): message` (`RPCError`), which
///   GetCaptureJob reads its code from; what may pass (a service restarting) is retried.
/// - A failure deletes only images under the job's keys, never one that stays attached, and
///   never the image an upload gave (`image_key`: another item may hold it).
public struct CaptureJobHandler: Sendable {
    /// Applies an edit to a JPEG; throws `RPCError(.invalidArgument)` for an edit that does not
    /// fit the photo. `lossless` tells whether the pixels were left as they were (a DCT crop).
    public typealias Editor = @Sendable (_ jpeg: [UInt8], _ edit: Edit) throws -> (data: [UInt8], lossless: Bool)
    /// Decodes a JPEG whole (under the pixel limit); throws why it cannot.
    public typealias Decoder = @Sendable (_ jpeg: [UInt8]) throws -> Void
    /// What decoding or editing a JPEG holds at its peak, weighed against the slots' budget.
    public typealias Weigher = @Sendable (_ jpeg: [UInt8]) -> Int

    /// The most bytes a photo or movie from the library or the camera may have, and a photo
    /// stored with one PutImage; larger ones go through a chunked upload.
    public static let maxPutBytes = 32 << 20
    /// The largest file read from the library.
    public static let maxSourceBytes = 1 << 30
    /// The most photos an item holds (item-service's limit, `ItemInput.maxPhotosPerItem`).
    static let maxPhotosPerItem = 100

    let items: ClientConnection
    let images: ClientConnection
    let reader: CaptureSourceReader
    let slots: ComputeSlots
    let weigher: Weigher
    let editor: Editor
    let decoder: Decoder
    let maxPixels: Int

    /// A handler talking to item-service through `items` and to image-service through
    /// `images`, reading sources as `sources` says; decodes and edits run within `slots`.
    public init(
        items: ClientConnection, images: ClientConnection, sources: CaptureSources, slots: ComputeSlots = ComputeSlots(count: .max),
        weigher: @escaping Weigher = { _ in 0 }, maxPixels: Int = 100_000_000, editor: @escaping Editor, decoder: @escaping Decoder
    ) {
        self.weigher = weigher
        self.items = items
        self.images = images
        self.reader = CaptureSourceReader(sources: sources, maxBytes: Self.maxSourceBytes)
        self.slots = slots
        self.editor = editor
        self.decoder = decoder
        self.maxPixels = maxPixels
    }

    /// Runs `job` and returns its result's bytes (a `CaptureOutcome`).
    public func run(_ job: Job) async throws -> [UInt8] {
        try await JobRunner.typed(CaptureRequest.self) { request, job in
            do {
                return try await capture(request, job)
            } catch {
                // (No `catch let … as`: Swift 6.3 miscompiles some in async closures.)
                if let rpc = error as? RPCError, Self.isFinal(rpc.code) { throw JobFailure(rpc.description, permanent: true) }
                throw error
            }
        }(job)
    }

    /// Codes that another attempt would only get again.
    static func isFinal(_ code: StatusCode) -> Bool {
        [.invalidArgument, .notFound, .failedPrecondition, .permissionDenied, .outOfRange, .alreadyExists, .deadlineExceeded]
            .contains(code)
    }

    /// The keys a job stores under, the same at each of its attempts.
    struct OwnKeys: Sendable {
        var original: String
        var edited: String
        var all: [String] { [original, edited] }
    }

    func capture(_ request: CaptureRequest, _ job: Job) async throws -> CaptureOutcome {
        let item = try await item(request.itemKey)
        let own = OwnKeys(original: storedKey(job, "original"), edited: storedKey(job, "edited"))
        // The photos this attempt attached that the item did not hold before it.
        var attached: [String] = []
        do {
            return try await capture(request, into: item, own: own, attached: &attached)
        } catch {
            try await cleanUp(after: error, item: item.key, own: own, attached: attached)
            throw error
        }
    }

    /// The capture of `request` for `item` (as read at the start of the attempt).
    func capture(_ request: CaptureRequest, into item: Item, own: OwnKeys, attached: inout [String]) async throws -> CaptureOutcome {
        let edit = request.edit.flatMap { $0.isEmpty ? nil : $0 }
        // What an earlier attempt attached already takes no more room.
        let candidates = [request.imageKey.isEmpty ? own.original : request.imageKey.lowercased()] + (edit == nil ? [] : [own.edited])
        let adding = candidates.filter { !item.photoKeys.contains($0) }.count
        guard item.photoKeys.count + adding <= Self.maxPhotosPerItem else {
            throw RPCError.failedPrecondition(
                "item \(item.key) has \(item.photoKeys.count) photos already; this capture adds \(adding), and an item holds at most \(Self.maxPhotosPerItem): detach one first")
        }
        let source = try await obtain(request)
        // What the bytes are: a JPEG photo, decoded whole; a movie, by its container.
        let media = try classify(source)
        if media.mediaType == .movie {
            if request.mediaType == .image { throw RPCError.invalidArgument("\(source.name) is a movie (\(media.contentType)), not the photo media_type asks for") }
            if edit != nil { throw RPCError.invalidArgument("\(source.name) is a movie (\(media.contentType)): a movie is stored whole and takes no edit") }
        } else {
            if request.mediaType == .movie { throw RPCError.invalidArgument("\(source.name) is a photo, not the movie media_type asks for") }
            // An edit other than a crop decodes the whole photo itself; a crop may be made on
            // the DCT coefficients without a decode, so the photo is decoded first.
            if let bytes = source.bytes, edit?.isCropOnly ?? true {
                let decoder = decoder
                try await slots.run(cost: weigher(bytes)) { Result { try decoder(bytes) } }.get()
            }
        }
        // The edit before anything is stored: an edit that does not fit the photo (a crop
        // outside it) fails the job with nothing stored.
        var edited: [UInt8]?
        if let edit, let bytes = source.bytes {
            let editor = editor
            edited = try await slots.run(cost: weigher(bytes)) { Result { try editor(bytes, edit) } }.get().data
        }
        let checksum = source.checksum ?? source.bytes.map(SHA256.checksum) ?? ""
        var outcome = CaptureOutcome()
        let originalPrimary = request.makePrimary && edited == nil
        // Dedupe: the same bytes attached to this item already are that photo.
        let except = own.all + [source.storedKey].compactMap { $0 }
        if let duplicate = try await attachedPhoto(withChecksum: checksum, of: item, except: except) {
            (outcome.originalKey, outcome.duplicate) = (duplicate, true)
            if originalPrimary { try await attach(duplicate, to: item, primary: true, recording: &attached) }
        } else {
            let originalKey = source.storedKey ?? own.original
            if source.storedKey == nil {
                try await put(source.bytes!, key: originalKey, owner: item.key, kind: .original, parent: "", contentType: media.contentType)
            }
            let after = try await attach(originalKey, to: item, primary: originalPrimary, recording: &attached)
            if after.photoKeys.contains(originalKey) {
                outcome.originalKey = originalKey
            } else {
                // The same bytes were attached first by another capture (or attach) at the same
                // moment: item-service decided it in the attach's transaction, and that photo is
                // this one (made primary, if asked). What this job stored for it goes.
                guard let holder = try await attachedPhoto(withChecksum: checksum, of: after, except: except) else {
                    throw RPCError.aborted("the photo holding the content of \(originalKey) left item \(item.key) meanwhile; the capture runs again")
                }
                if source.storedKey == nil { try await deleteImage(originalKey) }
                (outcome.originalKey, outcome.duplicate) = (holder, true)
            }
        }
        if let edited {
            try await put(edited, key: own.edited, owner: item.key, kind: .edited, parent: outcome.originalKey, contentType: "image/jpeg")
            try await attach(own.edited, to: item, primary: request.makePrimary, recording: &attached)
            outcome.editedKey = own.edited
        }
        return outcome
    }

    /// Undoes what a failed attempt did that no retry would take up, and says why it failed.
    ///
    /// - The item deleted meanwhile (a put refused for a deleted owner, an attach to no item):
    ///   the images under the job's keys are deleted, and the job fails NOT_FOUND.
    /// - A refusal no retry gets past (an attach refused): the photos this attempt attached are
    ///   detached, then the images under the job's keys that the item does not hold are deleted
    ///   (one an earlier attempt attached stays, with the item).
    /// - Anything else is retried, and the next attempt takes up what this one stored.
    ///
    /// A task cancelled (its lease lost, or the worker stopping) deletes nothing: the job runs
    /// again, perhaps at once elsewhere, under the same keys.
    func cleanUp(after error: any Error, item: String, own: OwnKeys, attached: [String]) async throws {
        guard !Task.isCancelled else { return }
        if try await !itemExists(item) {
            for key in own.all.reversed() { try? await deleteImage(key) }
            throw RPCError.notFound("item \(item) was deleted while its capture ran; nothing of it was kept")
        }
        guard let refusal = error as? RPCError, Self.isFinal(refusal.code) else { return }
        for key in attached.reversed() { try? await detach(key, from: item) }
        // Only what the item does not hold (asked again: a failure to ask deletes nothing).
        guard let now = try? await self.item(item) else { return }
        for key in own.all.reversed() where !now.photoKeys.contains(key) { try? await deleteImage(key) }
    }

    // MARK: Sources

    /// What a source gave: bytes to store, or an image a chunked upload stored already.
    struct Obtained {
        var bytes: [UInt8]?
        var name: String
        /// An upload's own image (its bytes are read only when a photo needs its decode or edit).
        var storedKey: String?
        var checksum: String?
        var info: ImageInfo?
    }

    func obtain(_ request: CaptureRequest) async throws -> Obtained {
        switch request.source {
        case .upload where !request.imageKey.isEmpty:
            var stat = StatImageRequest()
            stat.key = request.imageKey
            let info: ImageInfo
            do {
                info = try await images.client.call(ImageServiceRPC.statImage, stat)
            } catch {
                if error.code == .notFound {
                    throw RPCError.notFound("image_key \(request.imageKey) names no stored image; commit the chunked upload first")
                }
                throw error
            }
            guard info.kind == .original else {
                throw RPCError.invalidArgument("image_key \(request.imageKey) is not an ORIGINAL (it is kind \(info.kind.rawValue))")
            }
            guard info.ownerKey.isEmpty || info.ownerKey == request.itemKey.lowercased() else {
                throw RPCError.failedPrecondition("image \(request.imageKey) belongs to owner \(info.ownerKey), not to item \(request.itemKey)")
            }
            // A photo is read to be decoded; a movie is taken as the image service sniffed it.
            let bytes = info.mediaType == .movie ? nil : try await read(request.imageKey)
            return Obtained(bytes: bytes, name: "image \(request.imageKey)", storedKey: request.imageKey, checksum: info.checksum, info: info)
        case .upload:
            return Obtained(bytes: request.data, name: "the uploaded data")
        case .library:
            let file = try reader.libraryFile(request.sourcePath)
            return Obtained(bytes: file.bytes, name: file.name)
        case .recent:
            let file = try reader.recentPhoto()
            return Obtained(bytes: file.bytes, name: file.name)
        case .camera:
            let shot = try await reader.camera()
            return Obtained(bytes: shot.bytes, name: "the camera's photo")
        default:
            throw RPCError.invalidArgument("source \(request.source.rawValue) is not one this worker knows")
        }
    }

    /// Sniffs what the bytes are (an upload's movie, not read: what the image service said).
    func classify(_ source: Obtained) throws -> (mediaType: MediaType, contentType: String) {
        let name = source.name
        guard let bytes = source.bytes else { return (source.info?.mediaType ?? .movie, source.info?.contentType ?? "") }
        let media: SniffedMedia
        do {
            media = try MediaSniffer.classify(bytes, maxPixels: maxPixels, decodeSlots: Self.sniffSlots)
        } catch {
            throw RPCError.invalidArgument("\(name) is not a photo or movie capture can take: \(error)")
        }
        guard media.mediaType == .movie || media.contentType == "image/jpeg" else {
            throw RPCError.invalidArgument("\(name) is \(media.contentType), which capture cannot decode; send a JPEG photo or a movie")
        }
        return (media.mediaType, media.contentType)
    }

    private static let sniffSlots = DispatchSemaphore(value: 2)

    // MARK: Calls

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
            var stat = StatImageRequest()
            stat.key = key
            guard let info = try? await images.client.call(ImageServiceRPC.statImage, stat) else { continue }
            if info.checksum == checksum { return key }
        }
        return nil
    }

    func read(_ key: String) async throws -> [UInt8] {
        guard let bytes = try await ImageReader(connection: images).read(key) else {
            throw RPCError.notFound("image \(key) was deleted while its capture ran")
        }
        return bytes
    }

    /// Stores `data` under `key`: one PutImage, or a chunked upload for what is larger.
    func put(_ data: [UInt8], key: String, owner: String, kind: ImageKind, parent: String, contentType: String) async throws {
        if data.count <= Self.maxPutBytes {
            var put = PutImageRequest()
            put.key = key
            put.ownerKey = owner
            put.data = data
            put.kind = kind
            put.parentKey = parent
            put.contentType = contentType
            _ = try await images.client.call(ImageServiceRPC.putImage, put, options: CallOptions(timeoutMilliseconds: 60_000))
            return
        }
        var begin = BeginUploadRequest()
        begin.key = key
        begin.ownerKey = owner
        begin.kind = kind
        begin.parentKey = parent
        begin.contentType = contentType
        begin.totalSize = Int64(data.count)
        begin.checksum = SHA256.checksum(data)
        let upload: BeginUploadResponse
        do {
            upload = try await images.client.call(ImageServiceRPC.beginUpload, begin)
        } catch {
            // Stored under the job's key already: an earlier attempt committed it, then died.
            if error.code == .alreadyExists { return try await takeUp(begin) }
            throw error
        }
        do {
            let chunk = max(64 << 10, min(Int(upload.maxChunkBytes), 8 << 20))
            var offset = 0
            while offset < data.count {
                var append = AppendUploadRequest()
                append.uploadId = upload.uploadId
                append.offset = Int64(offset)
                append.data = Array(data[offset..<min(data.count, offset + chunk)])
                _ = try await images.client.call(ImageServiceRPC.appendUpload, append, options: CallOptions(timeoutMilliseconds: 60_000))
                offset += append.data.count
            }
            var commit = CommitUploadRequest()
            commit.uploadId = upload.uploadId
            do {
                _ = try await images.client.call(ImageServiceRPC.commitUpload, commit, options: CallOptions(timeoutMilliseconds: 120_000))
            } catch {
                // Committed by an earlier attempt (still running when its lease ran out) meanwhile.
                if error.code == .alreadyExists { return try await takeUp(begin) }
                throw error
            }
        } catch {
            // Its staging file goes now rather than at its expiry (the commit discards it itself).
            var abort = AbortUploadRequest()
            abort.uploadId = upload.uploadId
            _ = try? await images.client.call(ImageServiceRPC.abortUpload, abort)
            throw error
        }
    }

    /// Takes up the image an earlier attempt of the job stored under `begin.key`: it must be
    /// there (else the job runs again), of the owner and kind this one would store.
    func takeUp(_ begin: BeginUploadRequest) async throws {
        var stat = StatImageRequest()
        stat.key = begin.key
        let info: ImageInfo
        do {
            info = try await images.client.call(ImageServiceRPC.statImage, stat)
        } catch {
            if error.code == .notFound { throw RPCError.aborted("image \(begin.key) was deleted as this capture stored it; it runs again") }
            throw error
        }
        guard info.ownerKey == begin.ownerKey, info.kind == begin.kind else {
            throw RPCError.failedPrecondition(
                "image \(begin.key) is stored already with owner \(info.ownerKey) and kind \(info.kind.rawValue), not as this capture's (owner \(begin.ownerKey), kind \(begin.kind.rawValue))")
        }
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
        Self.storedKey(queue: job.queue, jobID: job.jobId, createdAtMs: job.createdAtMs, role: role)
    }

    /// `storedKey` of the job `jobID` of `queue`, created at `createdAtMs`.
    static func storedKey(queue: String, jobID: String, createdAtMs: Int64, role: String) -> String {
        var digest = SHA256()
        digest.update(Array("homepwner capture \(queue) \(jobID) \(createdAtMs) \(role)".utf8))
        var bytes = Array(digest.finalize().prefix(16))
        bytes[6] = bytes[6] & 0x0f | 0x80  // version 8: a name-based UUID of our own
        bytes[8] = bytes[8] & 0x3f | 0x80  // RFC 9562 variant
        return NSUUID(uuidBytes: bytes).uuidString.lowercased()
    }
}
