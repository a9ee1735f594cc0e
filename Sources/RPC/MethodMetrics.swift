import Proto
import Locking

/// Calls by method, status code and latency (Metrics/Stats, docs/protocol.md 8.1).
///
/// The I/O thread records every reply it sends (one uncontended lock, no allocation); a
/// snapshot copies the table. Latencies go into a log-linear histogram of microseconds: exact
/// below 8 µs, then 8 buckets per power of two (a percentile is a bucket's upper bound, within
/// 12.5%), up to 2^27 µs (134 s); longer calls land in the last bucket.
final class MethodMetrics: Sendable {
    /// Status codes 0...16; an unknown code counts as UNKNOWN (2).
    static let codeCount = 17
    static let bucketCount = 8 + 24 * 8
    /// Per row: codes, buckets, then calls, total µs, max µs, request bytes, reply bytes.
    private static let stride = codeCount + bucketCount + 5
    private static let callsOffset = codeCount + bucketCount

    /// Method paths by row; the last row ("") takes calls that named no method served here.
    let paths: [String]
    private let rows: [String: Int]
    private let table: Locked<[UInt64]>

    init(paths: [String]) {
        self.paths = paths.sorted() + [""]
        var rows: [String: Int] = [:]
        for (index, path) in self.paths.enumerated() { rows[path] = index }
        self.rows = rows
        table = Locked([UInt64](repeating: 0, count: self.paths.count * Self.stride))
    }

    /// The row of a method path (the "" row for one not served here).
    func row(of path: String) -> Int {
        rows[path] ?? paths.count - 1
    }

    /// The histogram bucket of a latency in microseconds.
    static func bucket(ofMicroseconds value: UInt64) -> Int {
        guard value >= 8 else { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount  // ≥ 3
        let sub = Int((value >> UInt64(exponent - 3)) & 7)
        return min(bucketCount - 1, 8 + (exponent - 3) * 8 + sub)
    }

    /// The largest latency in microseconds a bucket holds.
    static func upperBound(ofBucket index: Int) -> UInt64 {
        guard index >= 8 else { return UInt64(index) }
        let exponent = UInt64((index - 8) / 8 + 3)
        let sub = UInt64((index - 8) % 8)
        return ((8 + sub + 1) << (exponent - 3)) - 1
    }

    /// Counts one reply (nothing for a row of -1).
    func record(row: Int, code: StatusCode, microseconds: UInt64, requestBytes: Int, replyBytes: Int) {
        guard row >= 0 else { return }
        let code = (0..<Int32(Self.codeCount)).contains(code.rawValue) ? Int(code.rawValue) : 2
        let base = row * Self.stride
        table.withLock { table in
            table[base + code] &+= 1
            table[base + Self.codeCount + Self.bucket(ofMicroseconds: microseconds)] &+= 1
            let calls = base + Self.callsOffset
            table[calls] &+= 1
            table[calls + 1] &+= microseconds
            table[calls + 2] = max(table[calls + 2], microseconds)
            table[calls + 3] &+= UInt64(requestBytes)
            table[calls + 4] &+= UInt64(replyBytes)
        }
    }

    /// Every row as the protocol reports it, in path order, then the "" row.
    func snapshot() -> [MethodStats] {
        let table = table.withLock { $0 }
        return paths.indices.map { row in
            let base = row * Self.stride
            var stats = MethodStats()
            stats.method = paths[row]
            let calls = base + Self.callsOffset
            stats.calls = table[calls]
            stats.totalUs = table[calls + 1]
            stats.maxUs = table[calls + 2]
            stats.requestBytes = table[calls + 3]
            stats.replyBytes = table[calls + 4]
            stats.codes = (0..<Self.codeCount).compactMap { code in
                let count = table[base + code]
                guard count > 0 else { return nil }
                var entry = StatusCount()
                entry.code = StatusCode(rawValue: Int32(code))
                entry.count = count
                return entry
            }
            let buckets = table[(base + Self.codeCount)..<(base + Self.codeCount + Self.bucketCount)]
            stats.p50Us = Self.percentile(0.50, of: buckets, calls: stats.calls, max: stats.maxUs)
            stats.p90Us = Self.percentile(0.90, of: buckets, calls: stats.calls, max: stats.maxUs)
            stats.p99Us = Self.percentile(0.99, of: buckets, calls: stats.calls, max: stats.maxUs)
            return stats
        }
    }

    /// The upper bound of the bucket holding the `fraction` quantile (never above the largest
    /// call seen); 0 with no calls.
    static func percentile(_ fraction: Double, of buckets: ArraySlice<UInt64>, calls: UInt64, max: UInt64) -> UInt64 {
        guard calls > 0 else { return 0 }
        let rank = UInt64((Double(calls) * fraction).rounded(.up))
        var seen: UInt64 = 0
        for (offset, count) in buckets.enumerated() {
            seen += count
            if seen >= rank { return Swift.min(upperBound(ofBucket: offset), max) }
        }
        return max
    }
}

/// What a reply is counted under: its method's row, when its request was read (monotonic
/// nanoseconds) and the size of its request body.
struct CallTag: Equatable, Sendable {
    let row: Int
    let arrived: Int64
    let requestBytes: Int

    /// A reply counted nowhere (tests of the cache alone).
    static let untracked = CallTag(row: -1, arrived: 0, requestBytes: 0)
}
