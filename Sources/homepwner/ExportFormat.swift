import Digest
import Foundation
import Proto
import Runtime

/// The layout of a portable export (docs/protocol.md §19): a ustar archive of JSON files in the
/// proto JSON mapping (proto field names) and `photos/<sha256 hex>`, ended by `manifest.json`,
/// which lists every other entry with its size and SHA-256.
enum ExportFormat {
    static let format = "homepwner-export"
    static let version = 1
    static let manifest = "manifest.json"
    static let items = "items.json"
    static let locations = "locations.json"
    static let categories = "categories.json"
    static let policy = "policy.json"
    static let history = "history.json"
    static let images = "images.json"
    static let jsonFiles = [items, locations, categories, policy, history, images]

    /// The names an export may hold.
    static func isAllowed(_ name: String) -> Bool {
        name == manifest || jsonFiles.contains(name) || photoHex(name) != nil
    }

    /// The hex of `photos/<64 lower-case hex>`, else nil.
    static func photoHex(_ name: String) -> String? {
        guard name.hasPrefix("photos/") else { return nil }
        let hex = name.dropFirst("photos/".count)
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
        return String(hex)
    }

    /// The entry of a photo's bytes by its checksum ("sha256:<hex>").
    static func photoName(_ checksum: String) -> String {
        "photos/" + (checksum.hasPrefix("sha256:") ? String(checksum.dropFirst(7)) : checksum)
    }

    static let jsonOptions = ProtoJSON.JSONOptions(useProtoNames: true, emitDefaults: false, prettyPrinted: false)

    /// One message as proto JSON, on one line.
    static func json<Message: ProtoMessage>(_ message: Message) throws -> String {
        try ProtoJSON.decode(message.serializedBytes(), as: Message.protoName, options: jsonOptions)
    }

    /// A JSON array of messages, one per line.
    static func jsonArray<Message: ProtoMessage>(_ messages: [Message]) throws -> [UInt8] {
        let lines = try messages.map { message in try json(message) }
        return Array(("[\n" + lines.joined(separator: ",\n") + (messages.isEmpty ? "]\n" : "\n]\n")).utf8)
    }

    /// The messages of a JSON array file; an error names the file and the element.
    static func messages<Message: ProtoMessage>(_ bytes: [UInt8], file: String, as: Message.Type) throws -> [Message] {
        guard let array = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [Any] else {
            throw ExportError("\(file): not a JSON array")
        }
        return try array.enumerated().map { index, element in
            try message(element, file: "\(file)[\(index)]", as: Message.self)
        }
    }

    /// One message from a parsed JSON object.
    static func message<Message: ProtoMessage>(_ object: Any, file: String, as: Message.Type) throws -> Message {
        guard object is [String: Any], let data = try? JSONSerialization.data(withJSONObject: object) else {
            throw ExportError("\(file): not a JSON object")
        }
        do {
            let wire = try ProtoJSON.encode(json: String(decoding: data, as: UTF8.self), as: Message.protoName)
            return try Message(serializedBytes: wire)
        } catch {
            throw ExportError("\(file): not a \(Message.protoName): \(error)")
        }
    }
}

/// manifest.json.
struct ExportManifest {
    struct File {
        var path: String
        var size: Int64
        var sha256: String
    }

    var createdAt = Date()
    var homepwnerVersion = HomepwnerVersion.string
    var historyHead = HistoryHead()
    var counts: [String: Int] = [:]
    var files: [File] = []

    func bytes() throws -> [UInt8] {
        var head: [String: Any] = ["seq": historyHead.seq, "hash": historyHead.hash, "at_ms": historyHead.atMs]
        if historyHead.seq == 0 { head = ["seq": 0, "hash": "", "at_ms": 0] }
        let object: [String: Any] = [
            "format": ExportFormat.format,
            "version": ExportFormat.version,
            "created_at": ISO8601DateFormatter().string(from: createdAt),
            "created_at_ms": Int64(createdAt.timeIntervalSince1970 * 1000),
            "homepwner_version": homepwnerVersion,
            "history_head": head,
            "counts": counts,
            "files": files.map { ["path": $0.path, "size": $0.size, "sha256": $0.sha256] },
        ]
        return [UInt8](try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) + [0x0a]
    }

    /// Reads and checks the shape of manifest.json; errors name it and the field.
    static func parse(_ bytes: [UInt8]) throws -> ExportManifest {
        let name = ExportFormat.manifest
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw ExportError("\(name): not a JSON object")
        }
        guard object["format"] as? String == ExportFormat.format else {
            throw ExportError("\(name): format is \(object["format"].map { "\($0)" } ?? "missing"), not \(ExportFormat.format): not a homepwner export")
        }
        guard let version = object["version"] as? Int, version == ExportFormat.version else {
            throw ExportError("\(name): version \(object["version"].map { "\($0)" } ?? "missing") is not one this build reads (\(ExportFormat.version)); use a newer homepwner")
        }
        var manifest = ExportManifest()
        if let ms = (object["created_at_ms"] as? NSNumber)?.int64Value { manifest.createdAt = Date(timeIntervalSince1970: Double(ms) / 1000) }
        manifest.homepwnerVersion = object["homepwner_version"] as? String ?? ""
        if let head = object["history_head"] as? [String: Any] {
            manifest.historyHead.seq = (head["seq"] as? NSNumber)?.int64Value ?? 0
            manifest.historyHead.hash = head["hash"] as? String ?? ""
            manifest.historyHead.atMs = (head["at_ms"] as? NSNumber)?.int64Value ?? 0
        }
        manifest.counts = object["counts"] as? [String: Int] ?? [:]
        guard let files = object["files"] as? [[String: Any]] else { throw ExportError("\(name): files is missing") }
        for (index, file) in files.enumerated() {
            guard let path = file["path"] as? String, let size = (file["size"] as? NSNumber)?.int64Value,
                let sha256 = file["sha256"] as? String
            else { throw ExportError("\(name): files[\(index)] needs path, size and sha256") }
            manifest.files.append(File(path: path, size: size, sha256: sha256))
        }
        return manifest
    }
}

/// Why an export cannot be written or read, naming the file.
struct ExportError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
