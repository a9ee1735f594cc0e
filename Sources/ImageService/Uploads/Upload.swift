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
