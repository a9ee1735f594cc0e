import Foundation

/// Writes a plain POSIX ustar archive (regular files only, names under 100 bytes), streaming:
/// a header, then the file's bytes as they come, padded to 512. `finish()` writes the two zero
/// blocks that end an archive. The writer never seeks, so FILE can be a pipe.
final class TarWriter {
    static let block = 512

    private let handle: FileHandle
    private var open: (name: String, size: Int64, written: Int64)?

    init(handle: FileHandle) {
        self.handle = handle
    }

    /// Writes a whole file.
    func add(_ name: String, _ bytes: [UInt8], modified: Date = Date()) throws {
        try begin(name, size: Int64(bytes.count), modified: modified)
        try write(bytes)
        try end()
    }

    /// Starts a file of exactly `size` bytes; `write` them, then `end()`.
    func begin(_ name: String, size: Int64, modified: Date = Date()) throws {
        precondition(open == nil, "a tar entry is open")
        try handle.write(contentsOf: Self.header(name, size: size, modified: modified))
        open = (name, size, 0)
    }

    func write(_ bytes: some Collection<UInt8>) throws {
        guard let entry = open else { preconditionFailure("no tar entry is open") }
        guard entry.written + Int64(bytes.count) <= entry.size else {
            throw TarError(entry: entry.name, "got more than its \(entry.size) bytes")
        }
        try handle.write(contentsOf: Data(bytes))
        open!.written += Int64(bytes.count)
    }

    /// Ends the open file; throws when fewer bytes came than `begin` announced.
    func end() throws {
        guard let entry = open else { preconditionFailure("no tar entry is open") }
        guard entry.written == entry.size else {
            throw TarError(entry: entry.name, "got \(entry.written) of its \(entry.size) bytes")
        }
        let pad = Int((Int64(Self.block) - entry.size % Int64(Self.block)) % Int64(Self.block))
        if pad > 0 { try handle.write(contentsOf: Data(count: pad)) }
        open = nil
    }

    /// The end-of-archive marker: two zero blocks.
    func finish() throws {
        precondition(open == nil, "a tar entry is open")
        try handle.write(contentsOf: Data(count: 2 * Self.block))
    }

    /// A ustar header: mode 0644, owner 0, a regular file.
    static func header(_ name: String, size: Int64, modified: Date) throws -> Data {
        let nameBytes = Array(name.utf8)
        guard !nameBytes.isEmpty, nameBytes.count < 100 else { throw TarError(entry: name, "its name must be 1…99 bytes") }
        guard size >= 0, size < 0o77777777777 else { throw TarError(entry: name, "is too large for a ustar archive (\(size) bytes)") }
        var header = [UInt8](repeating: 0, count: block)
        func put(_ text: String, at offset: Int) {
            for (index, byte) in text.utf8.enumerated() { header[offset + index] = byte }
        }
        put(name, at: 0)
        put("0000644", at: 100)
        put("0000000", at: 108)
        put("0000000", at: 116)
        put(octal(size, width: 11), at: 124)
        put(octal(Int64(max(0, modified.timeIntervalSince1970)), width: 11), at: 136)
        put("        ", at: 148)
        header[156] = UInt8(ascii: "0")
        put("ustar", at: 257)
        put("00", at: 263)
        let sum = header.reduce(0) { $0 + Int($1) }
        put(octal(Int64(sum), width: 6), at: 148)
        header[154] = 0
        header[155] = UInt8(ascii: " ")
        return Data(header)
    }

    static func octal(_ value: Int64, width: Int) -> String {
        let digits = String(value, radix: 8)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// What is wrong with an archive or one of its entries (named).
struct TarError: Error, CustomStringConvertible {
    let description: String

    init(entry: String, _ problem: String) {
        description = "\(entry): \(problem)"
    }

    init(_ description: String) {
        self.description = description
    }
}
