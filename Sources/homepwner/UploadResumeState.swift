import Digest
import Foundation

/// The upload id a chunked `image put` of one file remembers, so a run after an interruption
/// (the client killed, the service restarted) resumes it: one small file in
/// `$XDG_CACHE_HOME/homepwner/uploads/` (else `~/.cache/homepwner/uploads/`), named by a
/// digest of the file's absolute path, size and mtime and of the image service endpoint.
struct UploadResumeState {
    /// The state file.
    let path: String

    /// The state of `file` (of `size` bytes) uploaded to `endpoint`; nil when the file has no
    /// modification time to key it by.
    init?(file: String, size: Int, endpoint: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        let absolute = URL(fileURLWithPath: file).standardizedFileURL.path
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: absolute))?[.modificationDate] as? Date else {
            return nil
        }
        let base: String
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            base = cache
        } else {
            base = (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        }
        let identity = "\(absolute)\n\(size)\n\(modified.timeIntervalSince1970)\n\(endpoint)"
        let digest = SHA256.checksum(Array(identity.utf8)).dropFirst("sha256:".count)
        path = "\(base)/homepwner/uploads/\(digest.prefix(32)).upload"
    }

    /// The remembered upload id, or nil.
    func load() -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let id = text.split(separator: "\n").first.map(String.init) ?? ""
        return id.isEmpty ? nil : id
    }

    /// Remembers `uploadID` (written whole, then renamed over the old state); a failure only
    /// means the next run cannot resume, so it is not an error of the put.
    func save(_ uploadID: String) {
        let folder = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let temporary = path + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data((uploadID + "\n").utf8)) else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// Forgets the upload (committed, aborted, or unknown to the service).
    func remove() { unlink(path) }
}
