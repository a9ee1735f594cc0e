import Digest
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reading blobs back: whole, ranged, streamed, each block checked against its stored digest.
extension BlobStore {
    /// Whether the file at `path` holds exactly `size` bytes whose content check is `contentCheck`.
    static func holds(_ path: String, size: Int64, contentCheck: String) -> Bool {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard let actual = try? Self.size(fd, path), actual == size else { return false }
        var hash = ContentDigest(like: contentCheck)
        guard (try? stream(fd, size: size, path: path) { bytes, _ in hash.update(bytes) }) != nil else { return false }
        return hash.finish() == contentCheck
    }

    /// Reads the first `size` bytes of `fd` a block (`BlockChecks.blockSize`) at a time,
    /// handing each block and its offset to `body`.
    static func stream(
        _ fd: Int32, size: Int64, path: String, _ body: (UnsafeRawBufferPointer, Int64) throws -> Void
    ) throws {
        let chunk = BlockChecks.blockSize
        var buffer = [UInt8](repeating: 0, count: Int(min(Int64(chunk), size)))
        var position: Int64 = 0
        while position < size {
            let count = Int(min(Int64(chunk), size - position))
            try buffer.withUnsafeMutableBytes { raw in
                let piece = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                try readAll(fd, piece, offset: position, path: path)
                try body(UnsafeRawBufferPointer(piece), position)
            }
            position += Int64(count)
        }
    }

    /// Reads the whole blob and checks its size and content check; a mismatch is `BlobDamage`.
    func read(key: String, size: Int64, checksum: String) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: Int(size)) { buffer, count in
            _ = try read(
                key: key, size: size, verification: checksum, blockChecks: BlockChecks(), offset: 0,
                into: UnsafeMutableRawBufferPointer(buffer))
            count = Int(size)
        }
    }

    /// Reads bytes `offset ..< offset + target.count` of blob `key` into `target`, verifying
    /// every byte it hands over: with `blockChecks`, each block the range touches (and only
    /// those: the blocks wholly inside the range are read and checked in `target` itself);
    /// without, the whole file against `verification`, computing the block checks on the way.
    /// Returns those computed checks (for the row), or nil when `blockChecks` were given. A
    /// mismatch is `BlobDamage`, and `target` must then not be used.
    ///
    /// `copy` (as large as `target`, for whole blobs) gets the same bytes, each block copied
    /// right after it was read and checked, while it is still in the CPU's caches: the
    /// memory cache's copy of a reply's data.
    func read(
        key: String, size: Int64, verification: String, blockChecks: BlockChecks, offset: Int64,
        into target: UnsafeMutableRawBufferPointer, copy: UnsafeMutableRawBufferPointer? = nil
    ) throws -> BlockChecks? {
        precondition(copy == nil || (offset == 0 && copy!.count == target.count), "a copy is only made of a whole blob")
        let (fd, path) = try openStored(key)
        defer { close(fd) }
        let actualSize = try Self.size(fd, path)
        guard actualSize == size else {
            throw BlobDamage(key: key, detail: "file is \(actualSize) bytes, the index says \(size)")
        }
        precondition(offset >= 0 && Int64(target.count) <= size - offset, "read of \(target.count) bytes at \(offset) of \(size)")
        guard !blockChecks.isEmpty else {
            return try readVerifyingWhole(
                fd, path: path, key: key, size: size, verification: verification, offset: offset, into: target, copy: copy)
        }
        guard blockChecks.digests.count == BlockChecks.count(forSize: size) else {
            throw BlobDamage(key: key, detail: "the index holds \(blockChecks.digests.count) block checks for \(size) bytes")
        }
        let block = Int64(BlockChecks.blockSize), end = offset + Int64(target.count)
        // One pread per block, each checked (and copied) right after it arrives, while it is
        // in the CPU's caches: measured faster than longer reads (4 blocks, or the whole
        // range, before checking) and than asking for the whole range up front
        // (POSIX_FADV_WILLNEED), which also cost CPU.
        var scratch: UnsafeMutableRawBufferPointer?
        defer { scratch?.deallocate() }
        var index = Int(offset / block)
        while Int64(index) * block < end {
            let start = Int64(index) * block, stop = min(start + block, size)
            let from = max(start, offset), to = min(stop, end)
            if from == start && to == stop {
                let piece = UnsafeMutableRawBufferPointer(rebasing: target[Int(start - offset)..<Int(stop - offset)])
                try Self.readAll(fd, piece, offset: start, path: path)
                try verify(UnsafeRawBufferPointer(piece), block: index, at: start, blockChecks, key: key)
                if let copy { (copy.baseAddress! + Int(start)).copyMemory(from: piece.baseAddress!, byteCount: piece.count) }
            } else {
                // A block the range only partly covers: read and checked whole, then the part copied.
                if scratch == nil { scratch = .allocate(byteCount: BlockChecks.blockSize, alignment: 64) }
                let piece = UnsafeMutableRawBufferPointer(rebasing: scratch![0..<Int(stop - start)])
                try Self.readAll(fd, piece, offset: start, path: path)
                try verify(UnsafeRawBufferPointer(piece), block: index, at: start, blockChecks, key: key)
                (target.baseAddress! + Int(from - offset)).copyMemory(from: piece.baseAddress! + Int(from - start), byteCount: Int(to - from))
            }
            index += 1
        }
        return nil
    }

    /// The first `count` bytes of blob `key` (the whole blob when it is shorter), as they are
    /// on disk: not checked against the blob's checksums, for metadata that sits at the head
    /// (a JPEG's EXIF). Throws when the file is missing or cannot be read.
    func head(key: String, size: Int64, count: Int) throws -> [UInt8] {
        let (fd, path) = try openStored(key)
        defer { close(fd) }
        let length = Int(min(Int64(count), size, try Self.size(fd, path)))
        var bytes = [UInt8](repeating: 0, count: length)
        try bytes.withUnsafeMutableBytes { try Self.readAll(fd, $0, offset: 0, path: path) }
        return bytes
    }

    private func verify(_ bytes: UnsafeRawBufferPointer, block: Int, at start: Int64, _ checks: BlockChecks, key: String) throws {
        let actual = BlockChecks.digest(bytes)
        guard actual == checks.digests[block] else {
            throw BlobDamage(
                key: key,
                detail: "block \(block) (bytes \(start)–\(start + Int64(bytes.count) - 1)) does not match its checksum (XXH64 \(String(actual, radix: 16)), the index says \(String(checks.digests[block], radix: 16)))")
        }
    }

    /// `read` of a blob without block checks: the whole file streams through `verification`
    /// (straight into `target` when the whole blob is asked for), and its block checks are computed.
    private func readVerifyingWhole(
        _ fd: Int32, path: String, key: String, size: Int64, verification: String, offset: Int64,
        into target: UnsafeMutableRawBufferPointer, copy: UnsafeMutableRawBufferPointer?
    ) throws -> BlockChecks {
        var hash = ContentDigest(like: verification)
        var digests: [UInt64] = []
        digests.reserveCapacity(BlockChecks.count(forSize: size))
        if offset == 0 && Int64(target.count) == size {
            var start = 0
            while start < target.count {
                let piece = UnsafeMutableRawBufferPointer(rebasing: target[start..<min(start + BlockChecks.blockSize, target.count)])
                try Self.readAll(fd, piece, offset: Int64(start), path: path)
                hash.update(UnsafeRawBufferPointer(piece))
                digests.append(BlockChecks.digest(UnsafeRawBufferPointer(piece)))
                if let copy { (copy.baseAddress! + start).copyMemory(from: piece.baseAddress!, byteCount: piece.count) }
                start += piece.count
            }
        } else {
            let end = offset + Int64(target.count)
            try Self.stream(fd, size: size, path: path) { bytes, position in
                hash.update(bytes)
                digests.append(BlockChecks.digest(bytes))
                let from = max(position, offset), to = min(position + Int64(bytes.count), end)
                if from < to {
                    (target.baseAddress! + Int(from - offset)).copyMemory(from: bytes.baseAddress! + Int(from - position), byteCount: Int(to - from))
                }
            }
        }
        let actual = hash.finish()
        guard actual == verification else {
            throw BlobDamage(key: key, detail: "content checksum \(actual) does not match the stored \(verification)")
        }
        return BlockChecks(digests)
    }
}

/// A stored blob that no longer matches its index entry: DATA_LOSS on the wire.
struct BlobDamage: Error, CustomStringConvertible {
    let key: String
    let detail: String
    var description: String { "image \(key) is damaged on disk: \(detail)" }
}

/// The digest named by a stored check's prefix: "xxh64:" or "sha256:".
struct ContentDigest {
    private var sha: SHA256?
    private var xxh: XXHash64?

    init(like check: String) {
        if check.hasPrefix("xxh64:") { xxh = XXHash64() } else { sha = SHA256() }
    }

    static func of(_ bytes: [UInt8], like check: String) -> String {
        var digest = ContentDigest(like: check)
        bytes.withUnsafeBytes { digest.update($0) }
        return digest.finish()
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha?.update(bytes)
        xxh?.update(bytes)
    }

    mutating func finish() -> String {
        if var sha { return sha.checksum() }
        return xxh?.checksum() ?? ""
    }
}
