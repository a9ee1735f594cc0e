import Digest
import Dispatch
import Foundation
import JPEG
import Locking
import Media
import Proto
import Runtime
#if canImport(Glibc)
import Glibc
#endif

/// Chunked uploads (BeginUpload, AppendUpload, CommitUpload, AbortUpload): the uploads open
/// now, their staging files in `uploads/` and their rows in images.db, and the share of them
/// each client may hold. The store holds one and forwards its upload calls to it.
final class Uploads: Sendable {
    /// The uploads open now, by id.
    private let open = Locked<[String: Upload]>([:])
    /// Set by `close()` while it holds the `open` lock (always taken first): uploads ending
    /// their call are then dropped.
    private let closing = Locked(false)
    private let work: StoreWork
    private let blobs: BlobStore
    /// An upload's key is claimed while it commits, as a put's is.
    private let claims: KeyClaims
    private let limits: ImageStoreLimits
    private let clock: any WallClock
    private let logger: Logger
    private let hooks: StoreHooks

    init(
        work: StoreWork, blobs: BlobStore, claims: KeyClaims, limits: ImageStoreLimits, clock: any WallClock, logger: Logger,
        hooks: StoreHooks
    ) {
        self.work = work
        self.blobs = blobs
        self.claims = claims
        self.limits = limits
        self.clock = clock
        self.logger = logger
        self.hooks = hooks
    }

    /// Opens an upload of `totalSize` bytes for `peer` (counted against its share,
    /// `ImageStoreLimits.maxOpenUploads`); `checksum` ("sha256:<hex>", optional) is checked at
    /// commit. `validate` checks the new image's key, kind, parent and owner (the store's checks
    /// of a put).
    func begin(
        _ new: NewImage, totalSize: Int64, checksum: String, peer: [UInt8],
        validate: (NewImage) async throws -> NewImage
    ) async throws -> UploadTicket {
        expire()
        guard totalSize > 0 else { throw ImageStoreError.invalid("total_size must be > 0 (got \(totalSize))") }
        guard totalSize <= limits.maxUploadBytes else {
            throw ImageStoreError.tooLarge("total_size \(totalSize) is over the upload limit of \(limits.maxUploadBytes) bytes")
        }
        // What is declared is only a claim (the commit sniffs the data), but one that says PDF
        // is refused now rather than after gigabytes were sent.
        let declaresDocument = new.mediaType == .document || new.contentType.lowercased() == "application/pdf"
        guard !declaresDocument || totalSize <= limits.maxDocumentBytes else {
            throw ImageStoreError.tooLarge(
                "total_size \(totalSize) is over the document limit of \(limits.maxDocumentBytes) bytes (--max-document-bytes) for the PDF declared")
        }
        if !checksum.isEmpty { try Self.checkFormat(checksum, field: "checksum") }
        let new = try await validate(new)
        if !new.key.isEmpty, try await work.indexWrite({ try $0.get(new.key) }) != nil {
            throw ImageStoreError.alreadyExists("key \(new.key): an image with this key exists already")
        }
        let id = UUID().uuidString.lowercased()
        let path = blobs.uploadPath(id), blobs = blobs
        // Its entry durable before its row says it exists (start-up removes a file without a row).
        let fd = try await work.onDisk { () throws -> Int32 in
            let fd = try BlobStore.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC)
            do {
                try blobs.syncFolder(blobs.uploadsFolder)
            } catch {
                Glibc.close(fd)
                unlink(path)
                throw error
            }
            return fd
        }
        var upload = Upload(
            id: id, new: new, totalSize: totalSize, checksum: checksum, path: path, fd: fd, peer: peer,
            expiresAtMs: clock.nowMilliseconds() + limits.uploadExpiryMilliseconds)
        // Large uploads are staged around the page cache (see BlobStore.writeTemporaryDirect).
        if totalSize >= Int64(BlobStore.directWriteThreshold), let flag = BlobStore.directFlag {
            upload.directFD = Glibc.open(path, O_WRONLY | O_CLOEXEC | flag)
        }
        let (perPeer, total) = (limits.maxOpenUploads, limits.maxOpenUploadsTotal)
        let refusal = open.withLock { uploads -> String? in
            guard uploads.count < total else {
                return "\(uploads.count) uploads are open in all, the most this service keeps (\(total)); retry once some have ended"
            }
            let mine = uploads.values.reduce(0) { $0 + ($1.peer == peer ? 1 : 0) }
            guard mine < perPeer else {
                return "this client has \(mine) uploads open, the most one client may have (\(perPeer) of \(total)); commit or abort one first"
            }
            uploads[id] = upload
            return nil
        }
        if let refusal {
            upload.discard()
            throw ImageStoreError.tooLarge(refusal)
        }
        let row = upload.row
        do {
            try await work.indexWrite { try $0.insertUpload(row) }
        } catch {
            open.withLock { _ = $0.removeValue(forKey: id) }
            upload.discard()
            throw error
        }
        return UploadTicket(uploadID: id, expiresAtMs: upload.expiresAtMs, maxChunkBytes: limits.maxChunkBytes)
    }

    /// Resumes the open upload `id` (after a restart of this service or of the client): the
    /// same id, the bytes durably received so far, and a fresh expiry.
    func resume(_ id: String) async throws -> UploadTicket {
        expire()
        let upload = try claimUpload(id)
        let expires = clock.nowMilliseconds() + limits.uploadExpiryMilliseconds
        do {
            let received = upload.received
            try await work.indexWrite { try $0.updateUpload(id, receivedBytes: received, expiresAtMs: expires) }
        } catch {
            releaseUpload(upload)
            throw error
        }
        releaseUpload(upload, expiresAtMs: expires)
        return UploadTicket(
            uploadID: id, expiresAtMs: expires, maxChunkBytes: limits.maxChunkBytes, receivedBytes: upload.received)
    }

    /// Puts the uploads start-up loaded back (`RecoveryReport.openUploads`) into the table;
    /// one whose staging file cannot be opened again is dropped with its row.
    func load(_ rows: [UploadRow]) {
        var lost: [String] = []
        var loaded: [Upload] = []
        for row in rows {
            do {
                loaded.append(try Upload.reopen(row, path: blobs.uploadPath(row.id)))
            } catch {
                logger.warning("upload \(row.id) dropped at start: its staging file cannot be opened again (\(error))")
                unlink(blobs.uploadPath(row.id))
                lost.append(row.id)
            }
        }
        open.withLock { uploads in
            for upload in loaded { uploads[upload.id] = upload }
        }
        forgetUploadRows(lost)
    }

    /// Removes the rows of uploads that ended, without waiting: a row left by a crash before
    /// it commits has no staging file any more, and start-up drops it.
    private func forgetUploadRows(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        let logger = logger
        work.indexWriteLater({ try $0.deleteUploads(ids) }) { error in
            logger.warning("upload rows \(ids.joined(separator: ",")) not removed (start-up drops them): \(error)")
        }
    }

    /// Appends `data` at `offset`, which must equal the bytes received so far; returns the new total.
    func append(_ id: String, offset: Int64, data: some BlobBytes) async throws -> Int64 {
        expire()
        guard data.count > 0 else { throw ImageStoreError.invalid("data is empty") }
        guard offset >= 0 else { throw ImageStoreError.invalid("offset must be ≥ 0 (got \(offset))") }
        guard data.count <= limits.maxChunkBytes else {
            throw ImageStoreError.invalid("data is \(data.count) bytes, over max_chunk_bytes \(limits.maxChunkBytes)")
        }
        var upload = try claimUpload(id)
        do {
            guard offset == upload.received else {
                if offset >= 0, offset > upload.totalSize - Int64(data.count) {
                    throw ImageStoreError.outOfRange(
                        "offset \(offset) + \(data.count) bytes is past the declared total_size \(upload.totalSize)")
                }
                throw ImageStoreError.failedPrecondition(
                    "offset \(offset) does not match the \(upload.received) bytes received so far; append at offset \(upload.received)")
            }
            guard Int64(data.count) <= upload.totalSize - offset else {
                throw ImageStoreError.outOfRange(
                    "offset \(offset) + \(data.count) bytes = \(offset + Int64(data.count)) is past the declared total_size \(upload.totalSize)")
            }
            var staged = upload
            if staged.digestsStale { staged = try await catchUpDigests(staged) }
            let digests = work.digests
            let next = try await work.onDisk { [staged] () throws -> Upload in
                // The digests of the chunk on a second core while this one writes it.
                var ((hash, check), next) = try digests.alongside({
                    var (hash, check) = (staged.hash, staged.check)
                    try data.withBlobBytes { buffer in
                        hash.update(buffer)
                        check.update(buffer)
                    }
                    return (hash, check)
                }, while: {
                    var next = staged
                    try data.withBlobBytes { try next.stage($0) }
                    return next
                })
                (next.hash, next.check) = (hash, check)
                try next.makeDurable()
                return next
            }
            // Answered only once the bytes are fsynced and the row says so: nothing
            // acknowledged is lost by a crash.
            let received = next.received, expires = clock.nowMilliseconds() + limits.uploadExpiryMilliseconds
            try await work.indexWrite { try $0.updateUpload(id, receivedBytes: received, expiresAtMs: expires) }
            upload = next
        } catch {
            releaseUpload(upload)
            throw error
        }
        releaseUpload(upload)
        return upload.received
    }

    /// Verifies size, checksum and media of a complete upload and stores it as an image: its
    /// blob renamed into place here, its row added by `index` (the store's insert of a put's
    /// row, which returns it as written), under the claim of its key. When the photo was taken
    /// comes from the validation's walk of the staged file (`MediaSniffer.jpeg`), which reads
    /// its header in place: nothing is read again for it.
    func commit(
        _ id: String, checksum: String, index: (ImageInfo, _ contentCheck: String) async throws -> ImageInfo
    ) async throws -> ImageInfo {
        expire()
        if !checksum.isEmpty { try Self.checkFormat(checksum, field: "checksum") }
        var upload = try claimUpload(id)
        guard upload.received == upload.totalSize else {
            releaseUpload(upload)
            throw ImageStoreError.failedPrecondition(
                "received \(upload.received) of the declared total_size \(upload.totalSize) bytes; append the rest before committing")
        }
        if upload.digestsStale {
            do {
                upload = try await catchUpDigests(upload)
            } catch {
                releaseUpload(upload)
                throw error
            }
        }
        var hash = upload.hash
        let actual = hash.checksum()
        for (given, when) in [(upload.checksum, "at begin"), (checksum, "at commit")] where !given.isEmpty && given != actual {
            drop(upload)
            throw ImageStoreError.invalid(
                "checksum \(given) given \(when) does not match the received data (\(actual)); the upload is discarded")
        }
        var new = upload.new
        if new.key.isEmpty { new.key = UUID().uuidString.lowercased() }
        let chosenKey = new.key
        let exists: Bool
        do {
            try await claims.claim(chosenKey)
        } catch {
            releaseUpload(upload)  // ABORTED: the upload stays, so a retry of the commit can succeed
            throw error
        }
        defer { claims.release(chosenKey) }
        do {
            exists = try await work.indexWrite({ try $0.get(chosenKey) }) != nil
        } catch {
            releaseUpload(upload)
            throw error
        }
        // The key may have been stored since BeginUpload; never rename over it.
        if exists {
            drop(upload)
            throw ImageStoreError.alreadyExists("key \(chosenKey): an image with this key was stored during the upload; the upload is discarded")
        }
        // From here the upload ends either as an image or discarded: nothing partial stays.
        open.withLock { _ = $0.removeValue(forKey: id) }
        let blobs = blobs, limits = limits, key = new.key, declared = new, committed = upload, staged = hooks.current.uploadStaged
        let media: SniffedMedia
        do {
            media = try await work.onDisk { () throws -> SniffedMedia in
                var upload = committed
                defer {
                    Glibc.close(upload.fd)
                    if upload.directFD >= 0 { Glibc.close(upload.directFD) }
                }
                try upload.flushPending()
                staged?(upload.path)
                let media = try Self.sniff(upload, limits: limits)
                try ImageStore.checkSize(media, size: upload.totalSize, limits: limits, ending: "; the upload is discarded")
                try ImageStore.check(media, against: declared)
                try BlobStore.check(fsync(upload.fd), "fsync", upload.path)
                // Renamed and its folder fsynced before the row is added, not beside it as a
                // put's (`indexPlaced`): the staging file is named by upload, not by key, so
                // start-up could not finish an interrupted rename of it.
                try blobs.publish(temporary: upload.path, key: key)
                return media
            }
        } catch {
            unlink(upload.path)
            forgetUploadRows([id])
            if let error = error as? ImageStoreError, case .invalid(let message) = error {
                throw ImageStoreError.invalid(message + "; the upload is discarded")
            }
            throw error
        }
        // The staging file is gone (renamed): the row goes too, whatever the insert does.
        forgetUploadRows([id])
        let made = ImageStore.makeInfo(new, media: media, size: upload.totalSize, checksum: actual, createdAtMs: clock.nowMilliseconds())
        let info = try await index(made, upload.check.checksum())
        if let note = media.extraneousNote(key: key) { logger.info(note) }
        return info
    }

    /// Removes a claimed upload from the table and deletes its staged bytes.
    private func drop(_ upload: Upload) {
        open.withLock { _ = $0.removeValue(forKey: upload.id) }
        upload.discard()
        forgetUploadRows([upload.id])
    }

    /// `upload` with its digests covering the staged bytes (read through on an I/O lane).
    private func catchUpDigests(_ upload: Upload) async throws -> Upload {
        try await work.onDisk {
            var upload = upload
            try upload.catchUpDigests()
            return upload
        }
    }

    /// Drops an upload and its staged bytes.
    func abort(_ id: String) async throws {
        let result: Result<Upload, ImageStoreError> = open.withLock { uploads in
            guard let upload = uploads[id] else {
                return .failure(.notFound("upload_id \(id): no such upload (committed, aborted or expired)"))
            }
            // Its descriptor must not close under a running write.
            guard !upload.busy else { return .failure(.aborted("another call on upload \(id) is in progress; retry after it")) }
            uploads[id] = nil
            return .success(upload)
        }
        try result.get().discard()
        // Gone before the abort is answered, so a crash cannot bring it back.
        try await work.indexWrite { try $0.deleteUploads([id]) }
    }

    /// Drops uploads idle past their expiry; returns how many.
    @discardableResult
    func expire() -> Int {
        let now = clock.nowMilliseconds()
        let expired = open.withLock { uploads in
            let ids = uploads.values.filter { !$0.busy && $0.expiresAtMs <= now }.map(\.id)
            return ids.compactMap { uploads.removeValue(forKey: $0) }
        }
        forgetUploadRows(expired.map(\.id))
        for upload in expired {
            upload.discard()
            logger.info("upload \(upload.id) expired after \(upload.received) of \(upload.totalSize) bytes")
        }
        return expired.count
    }

    /// Uploads in progress.
    var count: Int { open.withLock { $0.count } }

    /// Closes the idle uploads now (kept on disk with their rows, to be resumed); one with a
    /// call in flight is closed when that call ends, so its file descriptor is never closed
    /// under a running write (and reused by another file).
    func close() {
        let idle = open.withLock { uploads in
            closing.withLock { $0 = true }
            let ids = uploads.values.filter { !$0.busy }.map(\.id)
            return ids.compactMap { uploads.removeValue(forKey: $0) }
        }
        for upload in idle { upload.closeFiles() }
    }

    private func claimUpload(_ id: String) throws -> Upload {
        let result: Result<Upload, ImageStoreError> = open.withLock { uploads in
            guard var upload = uploads[id] else {
                return .failure(.notFound("upload_id \"\(id)\": no such upload (committed, aborted or expired)"))
            }
            guard !upload.busy else {
                return .failure(.aborted("another call on upload \(id) is in progress; retry after it"))
            }
            upload.busy = true
            uploads[id] = upload
            return .success(upload)
        }
        return try result.get()
    }

    /// Ends a call on `upload`: back in the table, idle, its expiry extended (to `expiresAtMs`
    /// when the row was given one); closed and kept on disk when the store is closing.
    private func releaseUpload(_ upload: Upload, expiresAtMs: Int64? = nil) {
        var upload = upload
        upload.busy = false
        upload.expiresAtMs = expiresAtMs ?? clock.nowMilliseconds() + limits.uploadExpiryMilliseconds
        let stored = upload
        let dropped = open.withLock { uploads -> Upload? in
            guard uploads[stored.id] != nil else { return nil }
            if closing.withLock({ $0 }) { return uploads.removeValue(forKey: stored.id) }
            uploads[stored.id] = stored
            return nil
        }
        // Closing: kept on disk with its row, for the next start.
        dropped?.closeFiles()
    }

    static func checkFormat(_ checksum: String, field: String) throws(ImageStoreError) {
        let hex = checksum.dropFirst(7)
        guard checksum.hasPrefix("sha256:"), hex.count == 64, hex.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw .invalid("\(field) \"\(checksum)\" is not \"sha256:\" followed by 64 lower-case hex digits")
        }
    }

    /// Classifies a staged upload: a container by its first bytes; a PDF by those and its last
    /// `MediaSniffer.pdfTrailerBytes`; a JPEG, PNG or HEIC validated whole in place, through a
    /// read-only map of the staged file (never read into memory whole).
    private static func sniff(_ upload: Upload, limits: ImageStoreLimits) throws -> SniffedMedia {
        let maxPixels = limits.maxPixels, maxDecodeBytes = limits.maxRenditionSourceBytes
        let head = try readStaged(upload, offset: 0, count: Int(min(upload.totalSize, Int64(MediaSniffer.headBytes))))
        if MediaSniffer.startsAsPDF(head) {
            let count = min(upload.totalSize, Int64(MediaSniffer.pdfTrailerBytes))
            let tail = try readStaged(upload, offset: upload.totalSize - count, count: Int(count))
            do {
                return try MediaSniffer.pdf(head: head, tail: tail)
            } catch {
                throw ImageStoreError.invalid(error.message)
            }
        }
        // A PNG or HEIC goes through `classify` whole; a JPEG through `classifyJPEG`.
        let isPNG = head.starts(with: PNG.signature) || HEIF.sniff(head)
        guard head.starts(with: [0xFF, 0xD8, 0xFF]) || isPNG else { return try ImageStore.classify(head, maxPixels: maxPixels) }
        let map = try MappedFile(fd: upload.fd, count: Int(upload.totalSize), path: upload.path)
        do {
            return try map.readBack { bytes in
                try isPNG
                    ? ImageStore.classify(
                        bytes, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes, maxDecodedBytes: limits.maxDecodedBytes)
                    : ImageStore.classifyJPEG(bytes, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes)
            }
        } catch let error as BlobIOError where error.code == EIO {
            // The bytes received are not all on disk any more: refused, never stored as sent.
            throw ImageStoreError.damaged(
                "upload \(upload.id): its staged bytes could not be read back to be validated (\(error)); the upload is discarded: upload the file again")
        }
    }

    private static func readStaged(_ upload: Upload, offset: Int64, count: Int) throws -> [UInt8] {
        try Upload.readStaged(upload.fd, path: upload.path, offset: offset, count: count)
    }
}
