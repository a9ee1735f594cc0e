import Foundation
import SQLite

#if canImport(Glibc)
import Glibc
#endif

/// Makes what a path names durable: the bytes of a file, or the entries of a folder.
public struct FileSync: Sendable {
    /// Syncs the file or folder at the path; throws when it cannot.
    public var sync: @Sendable (String) throws -> Void

    /// A sync made of `sync` (tests count the calls).
    public init(_ sync: @escaping @Sendable (String) throws -> Void) {
        self.sync = sync
    }

    /// fsync(2) through a read-only descriptor, which folders take too.
    public static let system = FileSync { path in
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSyncError(operation: "open", path: path, code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw FileSyncError(operation: "fsync", path: path, code: errno) }
    }
}

/// An open or fsync that failed, with its errno.
public struct FileSyncError: Error, CustomStringConvertible, Sendable {
    /// "open" or "fsync".
    public let operation: String
    public let path: String
    public let code: Int32

    public var description: String { "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))" }
}

extension ItemStore {
    /// Copies the seed database at `seedPath` to `path`, durably: the copy is written beside
    /// the target, synced, renamed into place, and the folder synced; a crash or power loss at
    /// any point leaves either no database at `path` (the next start copies again) or the
    /// whole copy.
    static func copySeed(_ seedPath: String, to path: String, fileSync: FileSync) throws {
        let files = FileManager.default
        guard files.fileExists(atPath: seedPath) else {
            throw ItemStoreError.invalidArgument("--seed-db \(seedPath): no such file")
        }
        // VACUUM INTO takes a consistent snapshot, commits still in the seed's WAL included;
        // a plain file copy is the fallback (e.g. a seed in a read-only folder).
        let staging = path + ".seed-\(UUID().uuidString.prefix(8))"
        do {
            do {
                let seed = try Database(path: seedPath, mode: .readOnly)
                try seed.execute("VACUUM INTO ?", [.text(staging)])
                try seed.close()
            } catch {
                try? files.removeItem(atPath: staging)
                try files.copyItem(atPath: seedPath, toPath: staging)
            }
            // A file copy syncs nothing, and VACUUM INTO syncs its output only as far as the
            // seed connection's synchronous setting says: renamed unsynced, a power loss could
            // leave a database at `path` whose pages never reached the disk, and it would
            // never be copied again.
            try fileSync.sync(staging)
            try files.moveItem(atPath: staging, toPath: path)
        } catch {
            try? files.removeItem(atPath: staging)
            throw error
        }
        // The rename lives in the folder: until the folder is synced, a power loss can take
        // the database back out of it, with the writes made since in a WAL beside nothing.
        do {
            let folder = (path as NSString).deletingLastPathComponent
            try fileSync.sync(folder.isEmpty ? "." : folder)
        } catch {
            try? files.removeItem(atPath: path)
            throw error
        }
    }
}
