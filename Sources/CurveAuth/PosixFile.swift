#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What identifies one version of a file: replaced (new inode), edited (size, mtime) or touched.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int
    var changedSeconds: Int
    var changedNanoseconds: Int

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
        changedSeconds = Int(info.st_ctim.tv_sec)
        changedNanoseconds = Int(info.st_ctim.tv_nsec)
    }

    /// The identity of what `path` names now (following symlinks), or the errno of `stat`.
    static func of(_ path: String) -> Result<FileIdentity, KeyFileError> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(.io(path: path, operation: "stat", errno: errno)) }
        return .success(FileIdentity(info))
    }
}

/// POSIX file operations with the exact modes and durability the key files need (`package`:
/// `Signing` writes and reads its key files with the same ones).
package enum PosixFile {
    /// The whole file, with the `fstat` of the descriptor it was read through (so the mode and
    /// identity belong to the bytes read, even if the path is replaced meanwhile).
    package static func read(_ path: String, limit: Int = 16 << 20) throws(KeyFileError) -> (bytes: [UInt8], info: stat) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(path: path, operation: "fstat", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .malformed(path: path, line: 0, reason: "not a regular file") }
        guard Int(info.st_size) <= limit else {
            throw .malformed(path: path, line: 0, reason: "\(info.st_size) bytes is larger than the \(limit)-byte limit")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes += chunk[0..<n]
                if bytes.count > limit { throw .malformed(path: path, line: 0, reason: "larger than the \(limit)-byte limit") }
            } else if n == 0 {
                return (bytes, info)
            } else if errno != EINTR {
                throw .io(path: path, operation: "read", errno: errno)
            }
        }
    }

    /// Writes `bytes` to `path` as a whole or not at all: a temporary file in the same folder,
    /// created with `mode` (never wider, whatever the umask) and fsynced, then renamed over
    /// `path` (`replace`) or hard-linked to it, which fails with `exists` if `path` exists. The
    /// folder is fsynced after, so the new name survives a crash. With `owner`, the file is given
    /// to that user and group before it appears (only root may give a file away).
    package static func writeAtomically(
        _ path: String, _ bytes: [UInt8], mode: mode_t, replace: Bool, owner: FileOwner? = nil
    ) throws(KeyFileError) {
        let (folder, base) = split(path)
        let temporary = folder + "/." + base + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        // O_EXCL: never follow or reuse something planted under the temporary name.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .io(path: temporary, operation: "open", errno: errno) }
        var renamed = false
        // After a rename the temporary name is gone; after a link (or a failure) it must go.
        defer { if !renamed { unlink(temporary) } }
        var failure = fill(fd, bytes, mode: mode, path: temporary)
        if failure == nil, let owner, fchown(fd, owner.user, owner.group) != 0 {
            failure = .io(path: path, operation: "chown to \(owner)", errno: errno)
        }
        close(fd)
        if let failure { throw failure }
        if replace {
            guard rename(temporary, path) == 0 else { throw .io(path: path, operation: "rename", errno: errno) }
            renamed = true
        } else {
            guard link(temporary, path) == 0 else {
                if errno == EEXIST { throw .exists(path: path) }
                throw .io(path: path, operation: "link", errno: errno)
            }
        }
        syncFolder(folder)
    }

    /// Sets `fd`'s mode to exactly `mode` (the umask can only narrow the creation mode), writes
    /// `bytes` and fsyncs; the error, if any.
    private static func fill(_ fd: Int32, _ bytes: [UInt8], mode: mode_t, path: String) -> KeyFileError? {
        guard fchmod(fd, mode) == 0 else { return .io(path: path, operation: "fchmod", errno: errno) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return .io(path: path, operation: "write", errno: errno)
            }
        }
        guard fsync(fd) == 0 else { return .io(path: path, operation: "fsync", errno: errno) }
        return nil
    }

    /// Removes `path` (undoing a half-done save); errors are ignored.
    package static func remove(_ path: String) {
        unlink(path)
    }

    /// Whether something exists at `path` (a dangling symlink counts).
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Runs `body` holding an exclusive `flock` on the folder of `path`, so two editors of the
    /// same file (two `homepwner keys` runs) do not lose each other's change.
    static func withFolderLock<T>(of path: String, _ body: () throws -> T) throws -> T {
        let (folder, _) = split(path)
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw KeyFileError.io(path: folder, operation: "open", errno: errno) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { throw KeyFileError.io(path: folder, operation: "flock", errno: errno) }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// The folder part (`.` when there is none) and the last component of `path`.
    static func split(_ path: String) -> (folder: String, base: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = String(path[..<slash])
        return (folder.isEmpty ? "/" : folder, String(path[path.index(after: slash)...]))
    }

    private static func syncFolder(_ folder: String) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        // Best effort: the file itself is already durable; only its new name may be lost.
        _ = fsync(fd)
        close(fd)
    }
}

/// `strerror` as a Swift string.
func errnoText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// `read(2)`, under a name that `PosixFile.read` does not shadow.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
