import Foundation

/// Every original photo of the report with its SHA-256, the time the image service received it
/// and the time it was taken (its EXIF), for the packet's last pages. Entries are spooled to a file beside the output
/// as the items are written and read back at the end, so the list costs no memory however
/// long it is.
public final class ClaimLedger {
    /// One original: what it is, whose, its digest, when it was received and when taken.
    public struct Entry: Sendable, Hashable {
        /// The item it belongs to.
        public var itemName: String
        /// The item's section: its location's path, or "No location".
        public var sectionName: String
        /// Its role's caption ("Receipt").
        public var caption: String
        /// The image key.
        public var key: String
        /// What the image service sniffed ("image/jpeg", "application/pdf").
        public var contentType: String
        /// The original's size.
        public var sizeBytes: Int64
        /// 64 lower-case hex digits.
        public var sha256: String
        /// When the image service stored it (ms since the Unix epoch).
        public var receivedAtMilliseconds: Int64
        /// When it was taken, as the image service read it from its EXIF (`ImageInfo.taken_at`:
        /// "2024-05-07T09:33:04+08:00", or local time alone); "" when unknown.
        public var takenAt: String
        /// "<sha256>.<ext>", as an HTML export names the original.
        public var fileName: String
    }

    /// Entries appended so far.
    public private(set) var count = 0
    private let path: String
    private var file: ClaimFile?

    /// A ledger spooled to a new file in `folder`.
    init(folder: String) throws(ClaimReportError) {
        path = folder + "/.claim-ledger-\(UUID().uuidString.prefix(8).lowercased())"
        file = try ClaimFile(creating: path)
    }

    deinit { remove() }

    /// Removes the spooled file; the ledger is empty after.
    func remove() {
        file = nil
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Records the originals of `item` that the image service holds.
    func append(_ item: ClaimItem, section: ClaimSection) throws(ClaimReportError) {
        for photo in item.photos {
            guard let info = photo.info else { continue }
            let fields = [
                item.item.name, section.name, photo.caption, photo.key, info.contentType, String(info.sizeBytes), photo.sha256,
                String(info.createdAtMs), photo.originalFileName, info.takenAt,
            ]
            try file?.write(fields.map(Self.escaped).joined(separator: "\t") + "\n")
            count += 1
        }
    }

    /// Hands `body` each entry in the order appended; no entry can be appended after.
    func forEach(_ body: (Entry) throws -> Void) throws {
        try file?.close()
        file = nil
        let reader = try ClaimLineReader(path: path)
        while let line = try reader.next() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map { Self.unescaped(String($0)) }
            guard fields.count == 10 else { continue }
            try body(
                Entry(
                    itemName: fields[0], sectionName: fields[1], caption: fields[2], key: fields[3], contentType: fields[4],
                    sizeBytes: Int64(fields[5]) ?? 0, sha256: fields[6], receivedAtMilliseconds: Int64(fields[7]) ?? 0,
                    takenAt: fields[9], fileName: fields[8]))
        }
    }

    private static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "\\" || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else { return text }
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\r\n": out += "\\r\\n"
            default: out.append(character)
            }
        }
        return out
    }

    private static func unescaped(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var out = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case "t": out.append("\t")
                case "n": out.append("\n")
                case "r": out.append("\r")
                default: out.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}
