import Digest

/// The XXH64 of each 1 MiB block of a blob, kept in its index row: a read verifies exactly
/// the blocks it sends (a range reads and checks only the blocks it touches), at XXH64's
/// ~20 GB/s, instead of the whole file.
struct BlockChecks: Sendable, Equatable {
    /// Bytes per block (the last block of a blob may be shorter).
    static let blockSize = 1 << 20

    /// One digest per block, in order; empty for rows stored before block checks existed (and
    /// for uploads), which are verified whole once and then given theirs.
    var digests: [UInt64]

    init(_ digests: [UInt64] = []) { self.digests = digests }

    var isEmpty: Bool { digests.isEmpty }

    /// How many blocks a blob of `size` bytes has.
    static func count(forSize size: Int64) -> Int { Int((size + Int64(blockSize) - 1) / Int64(blockSize)) }

    /// The digest of one block's bytes.
    static func digest(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash = XXHash64()
        hash.update(bytes)
        return hash.digest()
    }

    /// The checks of `bytes`, block by block.
    static func of(_ bytes: UnsafeRawBufferPointer) -> BlockChecks {
        var digests: [UInt64] = []
        digests.reserveCapacity(count(forSize: Int64(bytes.count)))
        var start = 0
        while start < bytes.count {
            let end = min(start + blockSize, bytes.count)
            digests.append(digest(UnsafeRawBufferPointer(rebasing: bytes[start..<end])))
            start = end
        }
        return BlockChecks(digests)
    }

    /// Little-endian, 8 bytes a block: the index column.
    var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digests.count * 8)
        for digest in digests { withUnsafeBytes(of: digest.littleEndian) { bytes += $0 } }
        return bytes
    }

    /// From the index column; empty when it is not a whole number of digests.
    init(encoded bytes: [UInt8]) {
        guard bytes.count % 8 == 0 else {
            self.init()
            return
        }
        let digests = stride(from: 0, to: bytes.count, by: 8).map { start in
            bytes[start..<start + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        self.init(digests)
    }
}
