import Digest
import Foundation
import Runtime
import Signing
import SQLite

/// Where things are in a backup folder (`BackupCommand`).
enum BackupLayout {
    static let manifestName = "manifest.json"
    static let format = "homepwner-backup 1"

    static func snapshots(_ folder: String) -> String { folder + "/snapshots" }

    /// "20261207T061502Z": sorts by time.
    static func snapshotName(_ date: Date) -> String { snapshotFormatter().string(from: date) }

    /// The time a snapshot's name says, nil for another name.
    static func snapshotDate(_ name: String) -> Date? {
        name.count == 16 ? snapshotFormatter().date(from: name) : nil
    }

    private static func snapshotFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter
    }

    /// A blob's file by its checksum ("sha256:<hex>"): `blobs/sha256/<2 hex>/<hex>`.
    static func blobPath(_ folder: String, checksum: String) -> String {
        let hex = checksum.hasPrefix("sha256:") ? String(checksum.dropFirst(7)) : checksum
        return folder + "/blobs/sha256/" + hex.prefix(2) + "/" + hex
    }

    static func relative(_ path: String, to folder: String) -> String {
        path.hasPrefix(folder + "/") ? String(path.dropFirst(folder.count + 1)) : path
    }

    /// Every image row of an images.db copy: key, checksum, size.
    static func imageRows(_ path: String) throws -> [(key: String, checksum: String, size: Int64)] {
        let db = try Database(path: path, mode: .readOnly)
        defer { try? db.close() }
        return try db.query("SELECT key, checksum, size_bytes FROM images ORDER BY seq").map {
            ($0[0].stringValue ?? "", $0[1].stringValue ?? "", $0[2].int64Value ?? 0)
        }
    }

    /// The newest snapshot in `folder`, or the one named.
    static func snapshot(in folder: String, named name: String?) throws -> String {
        if let name { return snapshots(folder) + "/" + name }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: snapshots(folder))) ?? []
        guard let newest = names.filter({ !$0.hasSuffix(".partial") }).sorted().last else {
            throw BackupError("\(folder) holds no backup (no \(snapshots(folder))/<time>/\(manifestName)); make one with 'homepwner backup \(folder)'")
        }
        return snapshots(folder) + "/" + newest
    }
}

/// A snapshot's manifest.json: every file with its size and SHA-256, counts, versions and the
/// history's head.
struct BackupManifest {
    struct File {
        /// Relative to the snapshot's folder (databases) or to the backup folder (blobs).
        var path: String
        var size: Int64
        var sha256: String
        var schemaVersion: Int = 0
    }

    /// An image whose bytes the backup could not copy (unreadable, or not hashing to its
    /// checksum): its row is in the copy of images.db, its bytes are not in the folder.
    struct NotCopied {
        var key: String
        var sha256: String
        var why: String
    }

    var databases: [File]
    var blobs: [File] = []
    var notCopied: [NotCopied] = []
    var itemCount: Int64 = 0
    var imageCount: Int64 = 0
    var historyHead: (seq: Int64, hash: String) = (0, "")
    var createdAt = Date()

    /// Counts and the history head, from the copies.
    mutating func readCounts(items: String, images: String) throws {
        let itemsDB = try Database(path: items, mode: .readOnly)
        defer { try? itemsDB.close() }
        itemCount = try itemsDB.scalar("SELECT count(*) FROM items")?.int64Value ?? 0
        if let row = try itemsDB.query("SELECT seq, hash FROM history ORDER BY seq DESC LIMIT 1").first {
            historyHead = (row[0].int64Value ?? 0, row[1].stringValue ?? "")
        }
        let imagesDB = try Database(path: images, mode: .readOnly)
        defer { try? imagesDB.close() }
        imageCount = try imagesDB.scalar("SELECT count(*) FROM images")?.int64Value ?? 0
    }

    var jsonObject: [String: Any] {
        func file(_ file: File) -> [String: Any] {
            var object: [String: Any] = ["path": file.path, "size": file.size, "sha256": file.sha256]
            if file.schemaVersion > 0 { object["schema_version"] = file.schemaVersion }
            return object
        }
        let formatter = ISO8601DateFormatter()
        return [
            "format": BackupLayout.format,
            "created_at": formatter.string(from: createdAt),
            "homepwner_version": HomepwnerVersion.string,
            "databases": databases.map(file),
            "blobs": blobs.map(file),
            "counts": ["items": itemCount, "images": imageCount, "blobs": blobs.count, "blob_bytes": blobs.reduce(0) { $0 + $1.size }],
            "history_head": ["seq": historyHead.seq, "hash": historyHead.hash],
            "not_copied": notCopied.map { ["key": $0.key, "sha256": $0.sha256, "why": $0.why] },
        ]
    }

    func write(to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: jsonObject, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Reads a manifest, naming what is wrong with one that does not parse.
    static func read(_ path: String) throws -> (databases: [File], blobs: [File], notCopied: [NotCopied], object: [String: Any]) {
        guard let data = FileManager.default.contents(atPath: path) else { throw BackupError("\(path) is missing") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], object["format"] as? String == BackupLayout.format
        else {
            throw BackupError("\(path) is not a manifest of this format (\(BackupLayout.format))")
        }
        func files(_ key: String) throws -> [File] {
            guard let list = object[key] as? [[String: Any]] else { throw BackupError("\(path): \"\(key)\" is missing") }
            return try list.enumerated().map { index, entry in
                guard let file = entry["path"] as? String, let size = (entry["size"] as? NSNumber)?.int64Value,
                    let sha = entry["sha256"] as? String
                else { throw BackupError("\(path): \(key)[\(index)] lacks path, size or sha256") }
                return File(path: file, size: size, sha256: sha, schemaVersion: (entry["schema_version"] as? NSNumber)?.intValue ?? 0)
            }
        }
        let notCopied = ((object["not_copied"] as? [[String: Any]]) ?? []).map {
            NotCopied(key: $0["key"] as? String ?? "?", sha256: $0["sha256"] as? String ?? "?", why: $0["why"] as? String ?? "?")
        }
        return (try files("databases"), try files("blobs"), notCopied, object)
    }
}

/// The manifest's Ed25519 signature, beside it as `manifest.json.sig`: the key's fingerprint and
/// the base64 signature of the manifest's bytes, one per line.
enum BackupSignature {
    static func path(of manifest: String) -> String { manifest + ".sig" }

    static func sign(manifest: String, with key: SigningKeyPair) throws {
        guard let bytes = FileManager.default.contents(atPath: manifest) else { throw BackupError("\(manifest) is missing") }
        let signature = Data(key.sign([UInt8](bytes))).base64EncodedString()
        try Data("\(key.fingerprint)\n\(signature)\n".utf8).write(to: URL(fileURLWithPath: path(of: manifest)), options: .atomic)
    }

    /// What is wrong with the manifest's signature checked against `key`, or nil when it holds.
    static func problem(manifest: String, key: SigningPublicKey) -> String? {
        let signaturePath = path(of: manifest)
        guard let text = FileManager.default.contents(atPath: signaturePath).map({ String(decoding: $0, as: UTF8.self) }) else {
            return "\(signaturePath): missing (the backup was not signed; make it with --sign-key)"
        }
        let lines = text.split(separator: "\n").map(String.init)
        guard lines.count == 2, let signature = Data(base64Encoded: lines[1]) else {
            return "\(signaturePath): not a signature file (a fingerprint line, then a base64 signature)"
        }
        guard lines[0] == key.fingerprint else {
            return "\(signaturePath): signed by \(lines[0]), not by the key given (\(key.fingerprint))"
        }
        guard let bytes = FileManager.default.contents(atPath: manifest),
            key.verify(signature: [UInt8](signature), message: [UInt8](bytes))
        else {
            return "\(manifest): its signature does not verify with \(key.fingerprint): the manifest was changed after it was signed"
        }
        return nil
    }
}
