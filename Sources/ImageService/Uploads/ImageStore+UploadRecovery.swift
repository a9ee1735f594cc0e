import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What start-up does with the uploads that were open when the service stopped (or died).
extension ImageStore {
    /// Checks each upload row against its staging file: a row past its expiry, or whose file is
    /// gone, is dropped (with its file); a file longer than the row's received bytes (a chunk
    /// written and never acknowledged) is cut back to them and fsynced; a staging file without
    /// a row (a BeginUpload that never answered) is removed. Returns the uploads kept.
    static func recoverUploads(
        index: ImageIndex, blobs: BlobStore, now: Int64
    ) throws -> (open: [UploadRow], truncated: Int, dropped: Int) {
        var kept: [UploadRow] = []
        var gone: [String] = []
        var truncated = 0
        for var row in try index.uploadRows() {
            let path = blobs.uploadPath(row.id)
            var info = stat()
            guard row.expiresAtMs > now, stat(path, &info) == 0 else {
                unlink(path)
                gone.append(row.id)
                continue
            }
            let size = Int64(info.st_size)
            if size > row.receivedBytes {
                let fd = try BlobStore.open(path, O_WRONLY | O_CLOEXEC)
                defer { Glibc.close(fd) }
                try BlobStore.check(ftruncate(fd, off_t(row.receivedBytes)), "ftruncate", path)
                try BlobStore.check(fsync(fd), "fsync", path)
                truncated += 1
            } else if size < row.receivedBytes {
                // Acknowledged bytes are fsynced before the row says so; a shorter file was cut
                // by someone else. The client resumes from what is there.
                row.receivedBytes = size
                try index.updateUpload(row.id, receivedBytes: size, expiresAtMs: row.expiresAtMs)
            }
            kept.append(row)
        }
        try index.deleteUploads(gone)
        let known = Set(kept.map { BlobStore.uploadFileName($0.id) })
        let names = (try? FileManager.default.contentsOfDirectory(atPath: blobs.uploadsFolder)) ?? []
        let strays = names.filter { !known.contains($0) }
        for name in strays { unlink("\(blobs.uploadsFolder)/\(name)") }
        if !strays.isEmpty || !gone.isEmpty { try blobs.syncFolder(blobs.uploadsFolder) }
        return (kept, truncated, gone.count)
    }
}

extension BlobStore {
    /// The staging file of upload `id`.
    func uploadPath(_ id: String) -> String { "\(uploadsFolder)/\(Self.uploadFileName(id))" }

    /// The name of upload `id`'s staging file in `uploadsFolder`.
    static func uploadFileName(_ id: String) -> String { "\(id).part" }
}
