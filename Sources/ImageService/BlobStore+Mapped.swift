#if canImport(Glibc)
import Glibc
#endif

extension BlobStore {
    /// Maps blob `key` read-only after checking its size, and streams its content check over
    /// the map (the pages the decoder then reads); a mismatch is `BlobDamage`, as for `read`.
    func mapVerified(key: String, size: Int64, checksum: String) throws -> MappedFile {
        let (fd, path) = try openStored(key)
        defer { close(fd) }
        let actualSize = try Self.size(fd, path)
        guard actualSize == size, size > 0 else {
            throw BlobDamage(key: key, detail: "file is \(actualSize) bytes, the index says \(size)")
        }
        let map = try MappedFile(fd: fd, count: Int(size), path: path)
        var digest = ContentDigest(like: checksum)
        digest.update(map.bytes)
        let actual = digest.finish()
        guard actual == checksum else {
            throw BlobDamage(key: key, detail: "content checksum \(actual) does not match the stored \(checksum)")
        }
        return map
    }
}
