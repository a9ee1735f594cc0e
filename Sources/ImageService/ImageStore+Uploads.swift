import Digest
import Dispatch
import Foundation
import Media
import Proto
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A chunked upload in progress: its staging file in `uploads/`, the running checksums, and
/// (in images.db, `UploadRow`) what survives a restart.
struct Upload: Sendable {
    let id: String
    var new: NewImage
    let totalSize: Int64
    let checksum: String
    let path: String
    let fd: Int32
    /// Whose share of the open uploads it counts against (`RPCContext.peer`); empty for one
    /// loaded back at start until it is resumed.
    var peer: [UInt8] = []
    /// The staging file opened again with O_DIRECT, where the file system allows it: whole
    /// 4 KiB blocks go around the page cache; -1 when not in use.
    var directFD: Int32 = -1
    /// Direct I/O was refused by a write: the rest goes through the page cache (the descriptor
    /// stays open until `discard`, so a failed append never leaves a stale copy of it).
    var directRefused = false
    /// Received bytes after the last whole block written direct (under 4 KiB; on disk at commit).
    var pending: [UInt8] = []
    var received: Int64 = 0
    var hash = SHA256()
    var check = XXHash64()
    var expiresAtMs: Int64
    /// An Append or Commit is running; a second one waits its turn by retrying.
    var busy = false
    /// `hash` and `check` do not cover the received bytes yet: the upload was loaded back at
    /// start, and its staged bytes are read through once before the next Append or Commit.
    var digestsStale = false

    /// Closes and removes the staging file (its row is removed by the caller).
    func discard() {
        closeFiles()
        unlink(path)
    }

    /// Closes the staging file and keeps it, for a start to resume.
    func closeFiles() {
        close(fd)
        if directFD >= 0 { close(directFD) }
    }

    /// What images.db keeps of it.
    var row: UploadRow {
        UploadRow(
            id: id, new: new, totalSize: totalSize, checksum: checksum, receivedBytes: received, expiresAtMs: expiresAtMs)
    }

    /// Opens the staging file of `row` again (after a restart): direct I/O as a new upload of
    /// its size would use, the tail after the last whole block read back into `pending`.
    static func reopen(_ row: UploadRow, path: String) throws -> Upload {
        let fd = try BlobStore.open(path, O_RDWR | O_CLOEXEC)
        var upload = Upload(
            id: row.id, new: row.new, totalSize: row.totalSize, checksum: row.checksum, path: path, fd: fd,
            received: row.receivedBytes, expiresAtMs: row.expiresAtMs, digestsStale: row.receivedBytes > 0)
        if row.totalSize >= Int64(BlobStore.directWriteThreshold), let flag = BlobStore.directFlag {
            upload.directFD = Glibc.open(path, O_WRONLY | O_CLOEXEC | flag)
            if upload.directFD >= 0 {
                let tail = Int(row.receivedBytes) & (BlobStore.directBlock - 1)
                do {
                    upload.pending = try readStaged(fd, path: path, offset: row.receivedBytes - Int64(tail), count: tail)
                } catch {
                    upload.closeFiles()
                    throw error
                }
            }
        }
        return upload
    }

    /// Reads the staged bytes through once, so `hash` and `check` cover them (see `digestsStale`).
    mutating func catchUpDigests() throws {
        guard digestsStale else { return }
        var (hash, check) = (SHA256(), XXHash64())
        let piece = 1 << 20
        var offset: Int64 = 0
        // The whole file: a pending tail read back at start is on disk too.
        while offset < received {
            let count = Int(min(Int64(piece), received - offset))
            let bytes = try Self.readStaged(fd, path: path, offset: offset, count: count)
            bytes.withUnsafeBytes { hash.update($0); check.update($0) }
            offset += Int64(count)
        }
        (self.hash, self.check, digestsStale) = (hash, check, false)
    }

    /// Makes every received byte durable before the Append is answered: the pending tail is
    /// written through the page cache as well (and stays pending, so the next direct write
    /// starts on a block), then the file is fsynced.
    func makeDurable() throws {
        if !pending.isEmpty {
            try pending.withUnsafeBytes { try writeBuffered($0, at: received - Int64(pending.count)) }
        }
        try BlobStore.check(fdatasync(fd), "fdatasync", path)
    }

    static func readStaged(_ fd: Int32, path: String, offset: Int64, count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            try BlobStore.readAll(fd, UnsafeMutableRawBufferPointer(buffer), offset: offset, path: path)
            initialized = count
        }
    }

    /// Writes `data`, which follows the bytes received so far, to the staging file: whole
    /// blocks with direct I/O (through an aligned buffer), the rest kept in `pending`; or all
    /// of it through the page cache when direct I/O is not in use or is refused.
    mutating func stage(_ data: UnsafeRawBufferPointer) throws {
        if directFD >= 0 && !directRefused {
            let start = received - Int64(pending.count)  // where `pending` begins: block-aligned
            let whole = (pending.count + data.count) & ~(BlobStore.directBlock - 1)
            if whole > 0 {
                do {
                    try pending.withUnsafeBytes { head in
                        try BlobStore.writeDirect(directFD, head, data, count: whole, at: start, path: path)
                    }
                } catch let error as BlobIOError where error.code == EINVAL {
                    // Direct I/O refused after all: from now on through the page cache, which
                    // writes `pending` and `data` again from `start`.
                    directRefused = true
                    try stage(data)
                    return
                }
                // `whole` covers all of `pending` (it is under one block): what is left is the
                // end of `data`.
                pending = [UInt8](UnsafeRawBufferPointer(rebasing: data[(whole - pending.count)...]))
            } else {
                pending += data
            }
            received += Int64(data.count)
            return
        }
        // Through the page cache (after any pending bytes, which go first).
        try flushPending()
        try writeBuffered(data, at: received)
        received += Int64(data.count)
    }

    /// Puts the pending bytes on disk (before the staged file is read or fsynced).
    mutating func flushPending() throws {
        guard !pending.isEmpty else { return }
        let bytes = pending
        pending = []
        try bytes.withUnsafeBytes { try writeBuffered($0, at: received - Int64(bytes.count)) }
    }

    private func writeBuffered(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try BlobStore.pwriteAll(fd, bytes, offset: offset, path: path)
    }
}

/// What BeginUpload answers.
public struct UploadTicket: Sendable, Equatable {
    /// Names the upload in Append/Commit/Abort.
    public var uploadID: String
    /// When it expires unless used again (each call extends it).
    public var expiresAtMs: Int64
    /// The largest AppendUpload chunk.
    public var maxChunkBytes: Int
    /// The bytes durably received so far: 0 for a new upload; where a resumed one continues.
    public var receivedBytes: Int64 = 0
}

extension ImageStore {
    /// Opens an upload of `totalSize` bytes for `peer` (counted against its share,
    /// `ImageStoreLimits.maxOpenUploads`); `checksum` ("sha256:<hex>", optional) is checked at commit.
    public func beginUpload(_ new: NewImage, totalSize: Int64, checksum: String, peer: [UInt8] = []) async throws -> UploadTicket {
        expireUploads()
        guard totalSize > 0 else { throw ImageStoreError.invalid("total_size must be > 0 (got \(totalSize))") }
        guard totalSize <= limits.maxUploadBytes else {
            throw ImageStoreError.tooLarge("total_size \(totalSize) is over the upload limit of \(limits.maxUploadBytes) bytes")
        }
        if !checksum.isEmpty { try Self.checkFormat(checksum, field: "checksum") }
        let new = try await validate(new)
        if !new.key.isEmpty, try await indexWrite({ try $0.get(new.key) }) != nil {
            throw ImageStoreError.alreadyExists("key \(new.key): an image with this key exists already")
        }
        let id = UUID().uuidString.lowercased()
        let path = blobs.uploadPath(id), blobs = blobs
        // Its entry durable before its row says it exists (start-up removes a file without a row).
        let fd = try await onDisk { () throws -> Int32 in
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
        let refusal = uploads.withLock { uploads -> String? in
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
            try await indexWrite { try $0.insertUpload(row) }
        } catch {
            uploads.withLock { _ = $0.removeValue(forKey: id) }
            upload.discard()
            throw error
        }
        return UploadTicket(uploadID: id, expiresAtMs: upload.expiresAtMs, maxChunkBytes: limits.maxChunkBytes)
    }

    /// Resumes the open upload `id` (after a restart of this service or of the client): the
    /// same id, the bytes durably received so far, and a fresh expiry.
    public func resumeUpload(_ id: String) async throws -> UploadTicket {
        expireUploads()
        let upload = try claimUpload(id)
        let expires = clock.nowMilliseconds() + limits.uploadExpiryMilliseconds
        do {
            let received = upload.received
            try await indexWrite { try $0.updateUpload(id, receivedBytes: received, expiresAtMs: expires) }
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
    func loadUploads(_ rows: [UploadRow]) {
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
        uploads.withLock { uploads in
            for upload in loaded { uploads[upload.id] = upload }
        }
        forgetUploadRows(lost)
    }

    /// Removes the rows of uploads that ended, without waiting: a row left by a crash before
    /// it commits has no staging file any more, and start-up drops it.
    private func forgetUploadRows(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        let logger = logger
        indexWriteLater({ try $0.deleteUploads(ids) }) { error in
            logger.warning("upload rows \(ids.joined(separator: ",")) not removed (start-up drops them): \(error)")
        }
    }

    /// Appends `data` at `offset`, which must equal the bytes received so far; returns the new total.
    public func appendUpload(_ id: String, offset: Int64, data: some BlobBytes) async throws -> Int64 {
        expireUploads()
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
            let digestLanes = digestLanes
            let next = try await onDisk { [staged] () throws -> Upload in
                // The digests of the chunk on a second core while this one writes it.
                var ((hash, check), next) = try digestLanes.alongside({
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
            try await indexWrite { try $0.updateUpload(id, receivedBytes: received, expiresAtMs: expires) }
            upload = next
        } catch {
            releaseUpload(upload)
            throw error
        }
        releaseUpload(upload)
        return upload.received
    }

    /// Verifies size, checksum and media of a complete upload and stores it as an image.
    public func commitUpload(_ id: String, checksum: String) async throws -> ImageInfo {
        expireUploads()
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
            exists = try await indexWrite({ try $0.get(chosenKey) }) != nil
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
        uploads.withLock { _ = $0.removeValue(forKey: id) }
        let blobs = blobs, limits = limits, key = new.key, declared = new, committed = upload, staged = hooks.current.uploadStaged
        let media: SniffedMedia
        do {
            media = try await onDisk { () throws -> SniffedMedia in
                var upload = committed
                defer {
                    Glibc.close(upload.fd)
                    if upload.directFD >= 0 { Glibc.close(upload.directFD) }
                }
                try upload.flushPending()
                staged?(upload.path)
                let media = try Self.sniff(upload, maxPixels: limits.maxPixels, maxDecodeBytes: limits.maxRenditionSourceBytes)
                try Self.check(media, against: declared)
                try BlobStore.check(fsync(upload.fd), "fsync", upload.path)
                // Renamed and its folder fsynced before the row is added, not beside it as a
                // put's (`placeAndIndex`): the staging file is named by upload, not by key, so
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
        let info = makeInfo(new, media: media, size: upload.totalSize, checksum: actual)
        try await insert(info, contentCheck: upload.check.checksum())
        if let note = media.extraneousNote(key: key) { logger.info(note) }
        return info
    }

    /// Removes a claimed upload from the table and deletes its staged bytes.
    private func drop(_ upload: Upload) {
        uploads.withLock { _ = $0.removeValue(forKey: upload.id) }
        upload.discard()
        forgetUploadRows([upload.id])
    }

    /// `upload` with its digests covering the staged bytes (read through on an I/O lane).
    private func catchUpDigests(_ upload: Upload) async throws -> Upload {
        try await onDisk {
            var upload = upload
            try upload.catchUpDigests()
            return upload
        }
    }

    /// Drops an upload and its staged bytes.
    public func abortUpload(_ id: String) async throws {
        let result: Result<Upload, ImageStoreError> = uploads.withLock { uploads in
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
        try await indexWrite { try $0.deleteUploads([id]) }
    }

    /// Drops uploads idle past their expiry; returns how many.
    @discardableResult
    public func expireUploads() -> Int {
        let now = clock.nowMilliseconds()
        let expired = uploads.withLock { uploads in
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
    public var openUploads: Int { uploads.withLock { $0.count } }

    private func claimUpload(_ id: String) throws -> Upload {
        let result: Result<Upload, ImageStoreError> = uploads.withLock { uploads in
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
        let dropped = uploads.withLock { uploads -> Upload? in
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

    /// Classifies a staged upload: a container by its first bytes; a JPEG validated whole in
    /// place, through a read-only map of the staged file (never read into memory whole).
    private static func sniff(_ upload: Upload, maxPixels: Int, maxDecodeBytes: Int64) throws -> SniffedMedia {
        let head = try readStaged(upload, offset: 0, count: Int(min(upload.totalSize, Int64(MediaSniffer.headBytes))))
        guard head.starts(with: [0xFF, 0xD8, 0xFF]) else { return try classify(head, maxPixels: maxPixels) }
        let map = try MappedFile(fd: upload.fd, count: Int(upload.totalSize), path: upload.path)
        do {
            return try map.readBack { bytes in
                try classifyJPEG(bytes, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes)
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
