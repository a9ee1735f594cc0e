import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What start-up uses to reconcile the folder with the index: quarantine, leftovers, every key.
extension BlobStore {
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
}
