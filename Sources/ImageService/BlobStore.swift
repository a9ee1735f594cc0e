import Digest
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why a blob file operation failed: the operation, the path and errno.
struct BlobIOError: Error, CustomStringConvertible {
    let operation: String
    let path: String
    let code: Int32

    var description: String { "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))" }
}

/// One file per blob under `blobs/` in 256 fan-out folders (`ab/<key>`, by the key's first
/// two hex digits), all made when the store is first opened.
///
/// A write goes to `tmp/`, is fsynced, renamed into place and its folder fsynced, so a blob
/// is either whole on disk or absent (a put commits its index row while that folder fsync
/// runs; see `ImageStore.placeAndIndex`). Every folder is fsynced into its parent when it is
/// made, before anything is written into it. Every method blocks: callers run them on their
/// own threads.
final class BlobStore: Sendable {
    /// The store's folder (`images/` under the data directory).
    let root: String
    /// `<root>/blobs`.
    let blobsFolder: String
    /// `<root>/tmp`: writes in progress; anything here at start is a leftover of a crash.
    let temporaryFolder: String
    /// `<root>/quarantine`: blobs start-up found without an index row, one folder per start.
    let quarantineFolder: String
    let hooks: StoreHooks

    init(root: String, hooks: StoreHooks = StoreHooks()) throws {
        self.root = root
        blobsFolder = root + "/blobs"
        temporaryFolder = root + "/tmp"
        quarantineFolder = root + "/quarantine"
        self.hooks = hooks
        var parents = try makeFolders(blobsFolder, syncing: false)
        parents.formUnion(try makeFolders(temporaryFolder, syncing: false))
        for byte in 0..<256 {
            let folder = blobsFolder + "/" + Self.hexDigits(byte)
            if try Self.makeFolder(folder) { parents.insert(blobsFolder) }
        }
        // The folders must survive a crash before any blob is renamed into them: each is made
        // durable by an fsync of the folder that holds it (deepest first, as made).
        for parent in parents.sorted(by: { $0.count > $1.count }) { try syncFolder(parent) }
    }

    /// Makes `path` and any missing folders above it; returns the folders that got a new entry
    /// (each new folder's parent), fsynced unless `syncing` is false (then the caller must).
    @discardableResult
    func makeFolders(_ path: String, syncing: Bool = true) throws -> Set<String> {
        var missing: [String] = []
        var folder = path
        while !folder.isEmpty, folder != "/", access(folder, F_OK) != 0 {
            missing.append(folder)
            folder = (folder as NSString).deletingLastPathComponent
        }
        var parents = Set<String>()
        for made in missing.reversed() where try Self.makeFolder(made) {
            parents.insert((made as NSString).deletingLastPathComponent)
        }
        if syncing { for parent in parents.sorted(by: { $0.count > $1.count }) { try syncFolder(parent) } }
        return parents
    }

    /// mkdir; false when something of that name exists already (a file in the way fails the
    /// writes into it later, with their own message).
    private static func makeFolder(_ path: String) throws -> Bool {
        if mkdir(path, 0o755) == 0 { return true }
        guard errno == EEXIST else { throw BlobIOError(operation: "mkdir", path: path, code: errno) }
        return false
    }

    private static func hexDigits(_ byte: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[byte >> 4], digits[byte & 15]])
    }

    /// The final path of a blob.
    func path(of key: String) -> String {
        "\(blobsFolder)/\(key.prefix(2).lowercased())/\(key)"
    }

    /// Opens a stored blob for reading.
    func openStored(_ key: String) throws -> (fd: Int32, path: String) {
        let path = path(of: key)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BlobIOError(operation: "open", path: path, code: errno) }
        return (fd, path)
    }

    /// Writes `bytes` durably as blob `key`: temporary file, fsync, rename, folder fsync.
    func write(_ bytes: [UInt8], key: String) throws {
        try bytes.withUnsafeBytes { try write($0, key: key) }
    }

    /// `write(_:key:)` from bytes in place.
    func write(_ bytes: UnsafeRawBufferPointer, key: String) throws {
        let temporary = try writeTemporary(bytes, key: key)
        do {
            try publish(temporary: temporary, key: key)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Blobs at least this large are written with direct I/O where the file system allows it.
    static let directWriteThreshold = 1 << 20

    /// Step one of `write`: the bytes in a fsynced temporary file; returns its path.
    ///
    /// Large blobs go around the page cache (`O_DIRECT`, through an aligned buffer): the fsync
    /// then has nothing left to flush, and a put does not pay for copying into and evicting
    /// page-cache pages that nothing reads (the cache above keeps the bytes). Where direct I/O
    /// is refused (tmpfs, some network file systems), the ordinary write is used.
    func writeTemporary(_ bytes: [UInt8], key: String) throws -> String {
        try bytes.withUnsafeBytes { try writeTemporary($0, key: key) }
    }

    /// `writeTemporary(_:key:)` from bytes in place.
    func writeTemporary(_ bytes: UnsafeRawBufferPointer, key: String) throws -> String {
        if bytes.count >= Self.directWriteThreshold, let path = try writeTemporaryDirect(bytes, key: key) {
            return path
        }
        let path = newTemporaryPath(key: key)
        let fd = try Self.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
        do {
            try Self.pwriteAll(fd, bytes, offset: 0, path: path)
            try Self.check(fsync(fd), "fsync", path)
            close(fd)
        } catch {
            close(fd)
            unlink(path)
            throw error
        }
        return path
    }

    /// `writeTemporary` with direct I/O; nil when the file system refuses it (nothing is left behind).
    func writeTemporaryDirect(_ bytes: [UInt8], key: String) throws -> String? {
        try bytes.withUnsafeBytes { try writeTemporaryDirect($0, key: key) }
    }

    /// `writeTemporaryDirect(_:key:)` from bytes in place.
    func writeTemporaryDirect(_ source: UnsafeRawBufferPointer, key: String) throws -> String? {
        guard let directFlag = Self.directFlag else { return nil }
        let path = newTemporaryPath(key: key)
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | directFlag, 0o644)
        if fd < 0 {
            if errno == EINVAL { return nil }
            throw BlobIOError(operation: "open", path: path, code: errno)
        }
        // Direct I/O wants the buffer, offset and length aligned to the device's block size;
        // 4 KiB covers the devices in use. The whole blocks go direct; the last partial block
        // is written through the page cache once O_DIRECT is cleared on the descriptor.
        do {
            let aligned = source.count & ~(Self.directBlock - 1)
            try Self.writeDirect(fd, UnsafeRawBufferPointer(start: nil, count: 0), source, count: aligned, at: 0, path: path)
            if aligned < source.count {
                let flags = fcntl(fd, F_GETFL)
                try Self.check(fcntl(fd, F_SETFL, flags & ~directFlag), "fcntl(clear O_DIRECT)", path)
                try Self.pwriteAll(fd, UnsafeRawBufferPointer(rebasing: source[aligned...]), offset: Int64(aligned), path: path)
            }
            try Self.check(fsync(fd), "fsync", path)
            close(fd)
        } catch let error as BlobIOError where error.code == EINVAL {
            // Refused at the first write (the file system has no direct I/O for this file).
            close(fd)
            unlink(path)
            return nil
        } catch {
            close(fd)
            unlink(path)
            throw error
        }
        return path
    }

    /// `O_DIRECT`, which SwiftGlibc does not import; nil where its value is not known here.
    static var directFlag: Int32? {
        #if os(Linux) && arch(x86_64)
        return 0o40000
        #elseif os(Linux) && arch(arm64)
        return 0o200000
        #else
        return nil
        #endif
    }

    /// A fresh path in `tmp/` for a write of `key`.
    func newTemporaryPath(key: String) -> String {
        "\(temporaryFolder)/\(key).\(UInt32.random(in: 0...UInt32.max)).tmp"
    }

    /// Makes the fan-out folder of `key` again (they are all made at open), durably.
    func prepareFolder(of key: String) throws {
        try makeFolders((path(of: key) as NSString).deletingLastPathComponent)
    }

    /// Step two of `write`: renames a fsynced temporary file into place and fsyncs the folders.
    func publish(temporary: String, key: String) throws {
        try rename(temporary: temporary, key: key)
        try syncFolder(of: key)
    }

    /// The rename of `publish`, without its folder fsync: the rename is not durable until
    /// `syncFolder(of:)` returns.
    func rename(temporary: String, key: String) throws {
        let final = path(of: key)
        if Glibc.rename(temporary, final) == 0 { return }
        // Its fan-out folder went missing (they are all made at open): make it, and try again.
        guard errno == ENOENT, access(temporary, F_OK) == 0 else { throw BlobIOError(operation: "rename to", path: final, code: errno) }
        try prepareFolder(of: key)
        try Self.check(Glibc.rename(temporary, final), "rename to", final)
    }

    /// Makes the renames into `key`'s folder durable.
    func syncFolder(of key: String) throws {
        try syncFolder((path(of: key) as NSString).deletingLastPathComponent)
    }

    /// Whether a file for `key` exists.
    func exists(key: String) -> Bool {
        access(path(of: key), F_OK) == 0
    }

    /// The key of a temporary file of a put (`<key>.<n>.tmp`), or nil for other names.
    static func key(ofTemporary name: String) -> String? {
        let parts = name.split(separator: ".")
        guard parts.count == 3, parts[2] == "tmp", parts[0].utf8.count == 36, UInt32(parts[1]) != nil else { return nil }
        return String(parts[0])
    }

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

    /// Removes a blob; a missing file is not an error (deletes are idempotent).
    func remove(key: String) {
        unlink(path(of: key))
    }

    /// A new folder in `quarantine/` named `name` (`name-2`, … when taken), made durably.
    func newQuarantineFolder(named name: String) throws -> String {
        try makeFolders(quarantineFolder)
        for attempt in 1... {
            let folder = quarantineFolder + "/" + (attempt == 1 ? name : "\(name)-\(attempt)")
            if mkdir(folder, 0o755) == 0 {
                try syncFolder(quarantineFolder)
                return folder
            }
            guard errno == EEXIST else { throw BlobIOError(operation: "mkdir", path: folder, code: errno) }
        }
        fatalError("unreachable")
    }

    /// Moves the file of blob `key` into `folder`; returns the folders the file left (none
    /// when it was not there). Durable once `folder` and those folders are fsynced.
    func quarantine(key: String, into folder: String) throws -> Set<String> {
        let source = path(of: key)
        guard access(source, F_OK) == 0 else { return [] }
        let target = "\(folder)/\(key)"
        try Self.check(Glibc.rename(source, target), "rename to", target)
        return [(source as NSString).deletingLastPathComponent]
    }

    /// Deletes every leftover in `tmp/` (interrupted writes and uploads); returns how many.
    @discardableResult
    func removeTemporaryLeftovers() -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporaryFolder)) ?? []
        for name in names { unlink("\(temporaryFolder)/\(name)") }
        return names.count
    }

    /// Every blob key on disk.
    func allKeys() -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: blobsFolder) else { return [] }
        var keys: [String] = []
        while let relative = walker.nextObject() as? String {
            // ab/<key>; the folders themselves are not keys.
            let parts = relative.split(separator: "/")
            if parts.count == 2 && parts[1].count == 36 { keys.append(String(parts[1])) }
        }
        return keys
    }

    // MARK: POSIX helpers

    static func open(_ path: String, _ flags: Int32) throws -> Int32 {
        let fd = Glibc.open(path, flags, 0o644)
        guard fd >= 0 else { throw BlobIOError(operation: "open", path: path, code: errno) }
        return fd
    }

    static func check(_ rc: Int32, _ operation: String, _ path: String) throws {
        guard rc == 0 else { throw BlobIOError(operation: operation, path: path, code: errno) }
    }

    static func size(_ fd: Int32, _ path: String) throws -> Int64 {
        var info = stat()
        try check(fstat(fd, &info), "fstat", path)
        return Int64(info.st_size)
    }

    /// The alignment direct I/O needs of buffers, offsets and lengths (4 KiB covers the devices in use).
    static let directBlock = 4096

    /// Writes the first `count` bytes of `head` followed by `tail` at `offset` on a descriptor
    /// opened with O_DIRECT, through a block-aligned buffer; `offset` and `count` are multiples
    /// of `directBlock`.
    static func writeDirect(
        _ fd: Int32, _ head: UnsafeRawBufferPointer, _ tail: UnsafeRawBufferPointer, count: Int, at offset: Int64, path: String
    ) throws {
        guard count > 0 else { return }
        let chunk = 4 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: min(chunk, count), alignment: directBlock)
        defer { buffer.deallocate() }
        var written = 0
        while written < count {
            let n = min(chunk, count - written)
            var filled = 0
            if written < head.count {
                filled = min(n, head.count - written)
                buffer.copyMemory(from: head.baseAddress! + written, byteCount: filled)
            }
            if filled < n {
                (buffer + filled).copyMemory(from: tail.baseAddress! + (written + filled - head.count), byteCount: n - filled)
            }
            try pwriteAll(fd, UnsafeRawBufferPointer(start: buffer, count: n), offset: offset + Int64(written), path: path)
            written += n
        }
    }

    /// Writes all of `bytes` at `offset` (pwrite, retrying short writes and EINTR).
    static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64, path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw BlobIOError(operation: "write", path: path, code: errno)
            }
            done += n
        }
    }

    static func readAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int64, path: String) throws {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw BlobIOError(operation: "read", path: path, code: errno)
            }
            if n == 0 { throw BlobIOError(operation: "read (file shorter than expected)", path: path, code: EIO) }
            done += n
        }
    }

    /// Makes the entries of folder `path` (files renamed or made in it) durable.
    func syncFolder(_ path: String) throws {
        try hooks.current.folderSync?(path)
        let fd = try Self.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(fd) }
        try Self.check(fsync(fd), "fsync", path)
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
