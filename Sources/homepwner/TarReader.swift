import Foundation

/// Reads a ustar archive that `TarWriter` wrote, or refuses it naming the entry: only regular
/// files, each named by a relative path without `.` or `..` components that `allowed` accepts,
/// at most once; every header's checksum right; every size within the file; the end-of-archive
/// blocks present and nothing but zeros after them. It reads the entries in place and writes
/// nothing to the disk, so no entry can reach outside.
final class TarReader {
    struct Entry {
        let name: String
        /// Where its bytes start in the file, and how many.
        let offset: Int64
        let size: Int64
    }

    let path: String
    /// In archive order.
    private(set) var entries: [Entry] = []
    private(set) var byName: [String: Entry] = [:]
    private let handle: FileHandle

    /// Indexes the archive at `path`; `allowed` says which names may be in it.
    init(path: String, allowed: (String) -> Bool) throws {
        self.path = path
        guard let handle = FileHandle(forReadingAtPath: path) else { throw TarError("\(path) cannot be read") }
        self.handle = handle
        let length = Int64(try handle.seekToEnd())
        var offset: Int64 = 0
        var index = 0
        while true {
            guard offset + Int64(TarWriter.block) <= length else {
                throw TarError("\(path) is truncated: it ends at byte \(length) without the end-of-archive blocks")
            }
            let header = try read(at: offset, count: TarWriter.block)
            if header.allSatisfy({ $0 == 0 }) {
                try checkEnd(after: offset, length: length)
                break
            }
            let name = try Self.name(header, index: index)
            let where_ = "entry \(index + 1) (\(name))"
            guard Self.number(header, 148, 8) == Int64(Self.checksum(header)) else {
                throw TarError(entry: where_, "its header checksum is wrong: the archive is damaged")
            }
            let type = header[156]
            guard type == UInt8(ascii: "0") || type == 0 else {
                throw TarError(entry: where_, "is not a regular file (type \(Self.typeName(type))); an export holds only files")
            }
            guard let size = Self.number(header, 124, 12) else { throw TarError(entry: where_, "its size field is not an octal number") }
            let start = offset + Int64(TarWriter.block)
            guard start + size <= length else {
                throw TarError(entry: where_, "says \(size) bytes, but the file ends \(length - start) bytes after its header (truncated)")
            }
            guard Self.isSafe(name) else {
                throw TarError(entry: where_, "its name is absolute or has an empty, . or .. component; refused")
            }
            guard allowed(name) else { throw TarError(entry: where_, "is not part of an export (unknown entry)") }
            guard byName[name] == nil else { throw TarError(entry: where_, "appears twice") }
            let entry = Entry(name: name, offset: start, size: size)
            entries.append(entry)
            byName[name] = entry
            offset = start + (size + Int64(TarWriter.block) - 1) / Int64(TarWriter.block) * Int64(TarWriter.block)
            index += 1
        }
    }

    deinit {
        try? handle.close()
    }

    /// The whole entry (for the JSON files: photos are read with `stream`).
    func bytes(_ entry: Entry) throws -> [UInt8] {
        try read(at: entry.offset, count: Int(entry.size))
    }

    /// The entry's bytes in pieces of at most `chunk`.
    func stream(_ entry: Entry, chunk: Int = 1 << 20, _ body: ([UInt8]) throws -> Void) throws {
        var done: Int64 = 0
        while done < entry.size {
            let count = Int(min(Int64(chunk), entry.size - done))
            try body(try read(at: entry.offset + done, count: count))
            done += Int64(count)
        }
    }

    private func read(at offset: Int64, count: Int) throws -> [UInt8] {
        try handle.seek(toOffset: UInt64(offset))
        let data = try handle.read(upToCount: count) ?? Data()
        guard data.count == count else { throw TarError("\(path) ended while reading \(count) bytes at \(offset)") }
        return [UInt8](data)
    }

    /// After the first zero block: a second one, then zeros only.
    private func checkEnd(after offset: Int64, length: Int64) throws {
        guard offset + 2 * Int64(TarWriter.block) <= length else {
            throw TarError("\(path) is truncated: its second end-of-archive block is missing")
        }
        var at = offset + Int64(TarWriter.block)
        while at < length {
            let count = Int(min(1 << 16, length - at))
            guard try read(at: at, count: count).allSatisfy({ $0 == 0 }) else {
                throw TarError("\(path) has data after its end-of-archive blocks (at byte \(at)); refused")
            }
            at += Int64(count)
        }
    }

    static func isSafe(_ name: String) -> Bool {
        guard !name.hasPrefix("/"), !name.contains("\\") else { return false }
        return name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }

    private static func name(_ header: [UInt8], index: Int) throws -> String {
        func field(_ offset: Int, _ length: Int) -> [UInt8] {
            Array(header[offset..<offset + length].prefix { $0 != 0 })
        }
        var bytes = field(0, 100)
        let prefix = field(345, 155)
        if header[257..<262].elementsEqual("ustar".utf8), !prefix.isEmpty { bytes = prefix + [UInt8(ascii: "/")] + bytes }
        guard let name = String(bytes: bytes, encoding: .utf8), !name.isEmpty, !name.contains("\0") else {
            throw TarError(entry: "entry \(index + 1)", "its name is empty or not UTF-8")
        }
        return name
    }

    /// An octal field (spaces and NULs around it allowed), or nil.
    private static func number(_ header: [UInt8], _ offset: Int, _ length: Int) -> Int64? {
        let text = String(decoding: header[offset..<offset + length], as: UTF8.self)
            .trimmingCharacters(in: CharacterSet(charactersIn: " \0"))
        guard !text.isEmpty, text.count <= 11 else { return nil }
        return Int64(text, radix: 8)
    }

    private static func checksum(_ header: [UInt8]) -> Int {
        header.enumerated().reduce(0) { $0 + ((148..<156).contains($1.offset) ? 32 : Int($1.element)) }
    }

    private static func typeName(_ type: UInt8) -> String {
        switch type {
        case UInt8(ascii: "1"): "hard link"
        case UInt8(ascii: "2"): "symbolic link"
        case UInt8(ascii: "5"): "directory"
        case UInt8(ascii: "x"), UInt8(ascii: "g"): "pax extended header"
        default: "'\(Character(UnicodeScalar(type)))'"
        }
    }
}
