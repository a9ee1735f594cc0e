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
/// runs; see `ImageStore.indexPlaced`). Every folder is fsynced into its parent when it is
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
    /// `<root>/uploads`: the staging files of chunked uploads (`<id>.part`), kept across
    /// restarts beside their rows in images.db.
    let uploadsFolder: String
    let hooks: StoreHooks

    init(root: String, hooks: StoreHooks = StoreHooks()) throws {
        self.root = root
        blobsFolder = root + "/blobs"
        temporaryFolder = root + "/tmp"
        quarantineFolder = root + "/quarantine"
        uploadsFolder = root + "/uploads"
        self.hooks = hooks
        var parents = try makeFolders(blobsFolder, syncing: false)
        parents.formUnion(try makeFolders(temporaryFolder, syncing: false))
        parents.formUnion(try makeFolders(uploadsFolder, syncing: false))
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
        try syncFolder(folder(of: key))
    }

    /// The fan-out folder `key`'s blob is in.
    func folder(of key: String) -> String {
        (path(of: key) as NSString).deletingLastPathComponent
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

    /// Removes a blob; a missing file is not an error (deletes are idempotent).
    func remove(key: String) {
        unlink(path(of: key))
    }

    /// Makes the entries of folder `path` (files renamed or made in it) durable.
    func syncFolder(_ path: String) throws {
        try hooks.current.folderSync?(path)
        let fd = try Self.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(fd) }
        try Self.check(fsync(fd), "fsync", path)
    }
}
