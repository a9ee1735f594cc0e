import Foundation
import Proto

/// A ListItems cursor: the sort, the query and filters it was issued for (`query`: their
/// fingerprint, `ItemFilter.fingerprint`) and the last item returned.
///
/// Keyset paging: the next page starts after (sort value, row id) of the last item, so items
/// added meanwhile never shift a page (nothing is skipped or repeated). Encoded as base64url
/// text with a checksum, so a token from nowhere is refused instead of misread.
struct ItemPageToken: Equatable {
    /// The sort column's value of the last item.
    enum Value: Equatable {
        case integer(Int64)
        case text(String)
        /// A relevance rank (its bits, so it comes back exactly).
        case real(Double)
    }

    var sort: Int32
    var descending: Bool
    var query: String
    var last: Value
    var lastID: Int64

    func encoded() -> String {
        var fields = ["v1", String(sort), descending ? "d" : "a", Data(query.utf8).base64EncodedString()]
        switch last {
        case let .integer(value): fields += ["i", String(value)]
        case let .text(value): fields += ["t", Data(value.utf8).base64EncodedString()]
        case let .real(value): fields += ["r", String(value.bitPattern)]
        }
        fields.append(String(lastID))
        let payload = Array(fields.joined(separator: ".").utf8)
        var bytes = payload
        withUnsafeBytes(of: Self.checksum(payload).bigEndian) { bytes += $0 }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes a token; throws INVALID_ARGUMENT naming it when it is not one of ours.
    init(decoding text: String) throws(ItemStoreError) {
        let refused = ItemStoreError.invalidArgument(
            "page_token \(ItemInput.quoted(text)) is not a next_page_token from ListItems; leave it empty for the first page")
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard text.count <= 2048, let data = Data(base64Encoded: base64), data.count > 8 else { throw refused }
        let bytes = Array(data)
        let payload = Array(bytes.dropLast(8))
        let sum = bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard sum == Self.checksum(payload) else { throw refused }
        let fields = String(decoding: payload, as: UTF8.self).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 7, fields[0] == "v1", let sort = Int32(fields[1]), let lastID = Int64(fields[6]),
            let queryData = Data(base64Encoded: fields[3])
        else { throw refused }
        self.sort = sort
        self.descending = fields[2] == "d"
        self.query = String(decoding: queryData, as: UTF8.self)
        self.lastID = lastID
        switch fields[4] {
        case "i":
            guard let value = Int64(fields[5]) else { throw refused }
            last = .integer(value)
        case "t":
            guard let data = Data(base64Encoded: fields[5]) else { throw refused }
            last = .text(String(decoding: data, as: UTF8.self))
        case "r":
            guard let bits = UInt64(fields[5]) else { throw refused }
            last = .real(Double(bitPattern: bits))
        default:
            throw refused
        }
    }

    init(sort: Int32, descending: Bool, query: String, last: Value, lastID: Int64) {
        self.sort = sort
        self.descending = descending
        self.query = query
        self.last = last
        self.lastID = lastID
    }

    /// FNV-1a, 64 bits: detects damaged or invented tokens (not a security boundary).
    static func checksum(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
