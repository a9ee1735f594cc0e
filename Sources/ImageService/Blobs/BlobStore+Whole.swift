#if canImport(Glibc)
import Glibc
#endif

extension BlobStore {
    /// Reads blob `key` whole into a new array after checking its size, each block digested
    /// right after it arrives, and checks its content check; a mismatch, a file that ends
    /// before its size or a read the disk fails (EIO) is `BlobDamage`, as for `read`.
    /// `opened` runs once the file is open and its size checked, before any byte is read.
    ///
    /// Read with pread, never through a memory map: a map's page past a file cut short, or
    /// one the disk cannot read, raises SIGBUS, which killed image-service (issue 27, 15a).
    func readWhole(key: String, size: Int64, checksum: String, opened: () -> Void = {}) throws -> [UInt8] {
        let (fd, path) = try openStored(key)
        defer { close(fd) }
        let actualSize = try Self.size(fd, path)
        guard actualSize == size, size > 0 else {
            throw BlobDamage(key: key, detail: "file is \(actualSize) bytes, the index says \(size)")
        }
        opened()
        var digest = ContentDigest(like: checksum)
        let bytes = try [UInt8](unsafeUninitializedCapacity: Int(size)) { buffer, count in
            let target = UnsafeMutableRawBufferPointer(buffer)
            var position = 0
            while position < target.count {
                let piece = UnsafeMutableRawBufferPointer(
                    rebasing: target[position..<min(target.count, position + BlockChecks.blockSize)])
                do {
                    try Self.readAll(fd, piece, offset: Int64(position), path: path)
                } catch let error as BlobIOError where error.code == EIO {
                    throw BlobDamage(key: key, detail: "\(error), in the \(size) bytes the index says, at byte \(position) or after")
                }
                digest.update(UnsafeRawBufferPointer(piece))
                position += piece.count
            }
            count = target.count
        }
        let actual = digest.finish()
        guard actual == checksum else {
            throw BlobDamage(key: key, detail: "content checksum \(actual) does not match the stored \(checksum)")
        }
        return bytes
    }
}
