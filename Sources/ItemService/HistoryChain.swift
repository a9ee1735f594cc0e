import Digest
import Proto
import SQLite

/// The hash chain in items.db's `history` table (history.proto, docs/protocol.md §17). Each row
/// holds an entry's protobuf encoding with `hash` unset, and its hash: the SHA-256 of those
/// bytes, which include the previous entry's hash. Appended inside the change's transaction,
/// so a change and its entry commit together or not at all.
enum HistoryChain {
    /// The actor of changes made without CURVE keys.
    static let localActor = "local"
    /// The actor of the entries recording what an installation held at the upgrade.
    static let upgradeActor = "upgrade"

    /// The last entry (seq 0 and '' while there is none).
    static func head(_ db: Database) throws -> HistoryHead {
        var head = HistoryHead()
        if let row = try db.query("SELECT seq, hash, at_ms FROM history ORDER BY seq DESC LIMIT 1").first {
            head.seq = row[0].int64Value ?? 0
            head.hash = row[1].stringValue ?? ""
            head.atMs = row[2].int64Value ?? 0
        }
        return head
    }

    /// Links `entry` to the head, hashes it and stores it; returns it with `seq`,
    /// `previous_hash` and `hash` filled.
    @discardableResult
    static func append(_ entry: HistoryEntry, to db: Database) throws -> HistoryEntry {
        var entry = entry
        let head = try head(db)
        entry.seq = head.seq + 1
        entry.previousHash = head.hash
        entry.hash = ""
        let bytes = entry.serializedBytes()
        let hash = SHA256.checksum(bytes)
        try db.execute(
            "INSERT INTO history (seq, at_ms, subject_key, entry, hash) VALUES (?, ?, ?, ?, ?)",
            [.integer(entry.seq), .integer(entry.atMs), .text(entry.subjectKey), .blob(bytes), .text(hash)])
        entry.hash = hash
        return entry
    }

    /// The entry of a row of `seq, entry, hash`, with its hash filled.
    static func entry(from row: Row) throws -> HistoryEntry {
        var entry = try HistoryEntry(serializedBytes: row[1].blobValue ?? [])
        entry.hash = row[2].stringValue ?? ""
        return entry
    }

    /// What the stored row of an entry fails to hold, checked against the entry before it
    /// (`previous`: its seq and hash), or nil when it holds.
    static func problem(seq: Int64, bytes: [UInt8], hash: String, previous: (seq: Int64, hash: String)) -> String? {
        guard seq == previous.seq + 1 else {
            guard seq > previous.seq + 1 else { return "entry \(seq) comes after entry \(previous.seq)" }
            let gap = seq - 1 == previous.seq + 1 ? "entry \(seq - 1) is missing" : "entries \(previous.seq + 1)…\(seq - 1) are missing"
            return "\(gap) (the chain goes from \(previous.seq) to \(seq))"
        }
        let computed = SHA256.checksum(bytes)
        guard computed == hash else {
            return "entry \(seq) was changed after it was written: its content hashes to \(computed), not the recorded \(hash)"
        }
        guard let entry = try? HistoryEntry(serializedBytes: bytes) else {
            return "entry \(seq) is not a HistoryEntry (its bytes do not decode)"
        }
        guard entry.seq == seq, entry.hash.isEmpty else {
            return "entry \(seq) records seq \(entry.seq)\(entry.hash.isEmpty ? "" : " and a hash of its own")"
        }
        guard entry.previousHash == previous.hash else {
            return "entry \(seq) links to \(entry.previousHash.isEmpty ? "nothing" : entry.previousHash), not to entry \(previous.seq)'s hash \(previous.hash)"
        }
        return nil
    }
}
