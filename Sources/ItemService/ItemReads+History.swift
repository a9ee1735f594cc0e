import Foundation
import Proto
import SQLite

/// Reading and checking the history (GetHistory, VerifyHistory): on the reader connection, so
/// a walk of the whole chain never holds up the store.
extension ItemReads {
    /// Entries oldest first, all or one subject's, a page at a time.
    func history(_ request: GetHistoryRequest) throws -> GetHistoryResponse {
        guard (0...1000).contains(request.pageSize) else {
            throw ItemStoreError.invalidArgument("page_size must be 0…1000 (got \(request.pageSize)); 0 means 100")
        }
        let pageSize = Int64(request.pageSize == 0 ? 100 : request.pageSize)
        var after: Int64 = 0
        if !request.pageToken.isEmpty {
            guard request.pageToken.hasPrefix("h"), let seq = Int64(request.pageToken.dropFirst()), seq > 0 else {
                throw ItemStoreError.invalidArgument(
                    "page_token \(ItemInput.quoted(request.pageToken)) is not one GetHistory gave; repeat the first page's request")
            }
            after = seq
        }
        let rows: [Row]
        if request.subjectKey.isEmpty {
            rows = try db.query(
                "SELECT seq, entry, hash FROM history WHERE seq > ? ORDER BY seq LIMIT ?", [.integer(after), .integer(pageSize + 1)])
        } else {
            let key = try ItemInput.key(request.subjectKey, field: "subject_key")
            rows = try db.query(
                "SELECT seq, entry, hash FROM history WHERE subject_key = ? AND seq > ? ORDER BY seq LIMIT ?",
                [.text(key), .integer(after), .integer(pageSize + 1)])
        }
        var response = GetHistoryResponse()
        response.entries = try rows.prefix(Int(pageSize)).map(HistoryChain.entry(from:))
        if rows.count > Int(pageSize), let last = response.entries.last { response.nextPageToken = "h\(last.seq)" }
        response.head = try HistoryChain.head(db)
        return response
    }

    /// Walks the whole chain, re-hashing every entry and checking its link, then compares every
    /// item, location, category and the policy with what its last entry recorded.
    func verifyHistory() throws -> VerifyHistoryResponse {
        var response = VerifyHistoryResponse()
        var previous: (seq: Int64, hash: String) = (0, "")
        let walk = try db.prepare("SELECT seq, entry, hash FROM history ORDER BY seq")
        try walk.forEachRow { row in
            guard response.firstBreakSeq == 0 else { return }
            let seq = row[0].int64Value ?? 0, hash = row[2].stringValue ?? ""
            response.entriesChecked += 1
            if let problem = HistoryChain.problem(seq: seq, bytes: row[1].blobValue ?? [], hash: hash, previous: previous) {
                response.firstBreakSeq = seq
                response.problem = problem
            }
            previous = (seq, hash)
        }
        response.head = try HistoryChain.head(db)
        var unrecorded = Unrecorded()
        try compareWithLastEntries(&unrecorded)
        for (table, kind) in [("items", "item"), ("locations", "location"), ("categories", "category")] {
            for row in try db.query("SELECT key FROM \(table) WHERE key NOT IN (SELECT subject_key FROM history)") {
                unrecorded.note("\(kind) \(row[0].stringValue ?? ""): exists, but no history entry records it")
            }
        }
        if try policy().version > 0, try db.scalar("SELECT 1 FROM history WHERE subject_key = '' LIMIT 1") == nil {
            unrecorded.note("the policy: set, but no history entry records it")
        }
        response.unrecorded = unrecorded.listed
        response.unrecordedCount = unrecorded.count
        response.intact = response.firstBreakSeq == 0 && unrecorded.count == 0
        return response
    }

    /// Each subject's last entry against what its table holds now.
    private func compareWithLastEntries(_ unrecorded: inout Unrecorded) throws {
        let last = try db.prepare("""
            SELECT h.seq, h.entry FROM history h
            JOIN (SELECT subject_key, max(seq) AS seq FROM history GROUP BY subject_key) l ON l.seq = h.seq
            ORDER BY h.seq
            """)
        try last.forEachRow { row in
            // An entry that does not decode is the chain walk's finding.
            guard let entry = try? HistoryEntry(serializedBytes: row[1].blobValue ?? []) else { return }
            let seq = row[0].int64Value ?? 0
            let gone = entry.action.hasSuffix(".deleted")
            let what = "\(entry.action) (entry \(seq))"
            switch entry.action.prefix(while: { $0 != "." }) {
            case "item", "photo":
                let current = try db.query("SELECT \(ItemStore.columns) FROM items WHERE key = ?", [.text(entry.subjectKey)]).first
                    .map(ItemStore.item(from:))
                unrecorded.compare("item \(entry.subjectKey)", recorded: gone ? nil : entry.item, current: current, last: what)
            case "location":
                let current = try? storedLocation(entry.subjectKey)
                unrecorded.compare("location \(entry.subjectKey)", recorded: gone ? nil : entry.location, current: current, last: what)
            case "category":
                let current = try? storedCategory(entry.subjectKey)
                unrecorded.compare("category \(entry.subjectKey)", recorded: gone ? nil : entry.category, current: current, last: what)
            case "policy":
                unrecorded.compare("the policy", recorded: entry.policy, current: try policy(), last: what)
            default:
                unrecorded.note("entry \(seq): an action this build does not know (\(ItemInput.quoted(entry.action)))")
            }
        }
    }
}

/// Subjects whose state no entry records: counted, the first 20 described.
private struct Unrecorded {
    static let listedAtMost = 20
    var listed: [String] = []
    var count: Int64 = 0

    mutating func note(_ finding: String) {
        count += 1
        if listed.count < Self.listedAtMost { listed.append(finding) }
    }

    /// Notes `subject` when what it is now differs from what its last entry recorded (nil:
    /// deleted), naming the fields that differ.
    mutating func compare<Message: ProtoMessage>(_ subject: String, recorded: Message?, current: Message?, last: String) {
        switch (recorded, current) {
        case (nil, nil):
            return
        case (nil, _?):
            note("\(subject): exists, but its last entry is \(last)")
        case (_?, nil):
            note("\(subject): gone, but its last entry is \(last), not a delete")
        case let (recorded?, current?):
            guard recorded.serializedBytes() != current.serializedBytes() else { return }
            let fields = Self.differingFields(recorded, current)
            note("\(subject): \(fields.isEmpty ? "its encoding" : fields.joined(separator: ", ")) changed since its last entry, \(last)")
        }
    }

    /// The names of the stored properties whose values differ.
    private static func differingFields<Message>(_ a: Message, _ b: Message) -> [String] {
        zip(Mirror(reflecting: a).children, Mirror(reflecting: b).children).compactMap { left, right in
            guard let label = left.label, String(describing: left.value) != String(describing: right.value) else { return nil }
            return label
        }
    }
}
