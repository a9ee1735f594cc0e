/// A streaming digest that works on whole blocks (SHA-256: 64 bytes, XXH64: 32): `absorb`
/// hands it whole blocks and keeps the bytes that do not fill one yet.
protocol BlockDigest {
    /// Bytes per block.
    static var blockSize: Int { get }
    /// Room for one block: the first `pendingCount` bytes are received but not yet processed.
    var pending: [UInt8] { get set }
    var pendingCount: Int { get set }
    /// Bytes received in all.
    var length: UInt64 { get set }
    /// Processes `blocks` whole blocks at `data`.
    mutating func consume(_ data: UnsafeRawPointer, blocks: Int)
}

extension BlockDigest {
    /// Adds bytes: completes the pending block first, then whole blocks straight from `bytes`,
    /// and keeps the rest.
    @inline(__always)
    mutating func absorb(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress else { return }
        var count = bytes.count
        let size = Self.blockSize
        length &+= UInt64(count)
        if pendingCount > 0 {
            let take = min(size - pendingCount, count), at = pendingCount
            pending.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: at).copyMemory(from: base, byteCount: take) }
            pendingCount += take
            base += take
            count -= take
            if pendingCount < size { return }
            do {
                let block = pending
                block.withUnsafeBytes { consume($0.baseAddress!, blocks: 1) }
            }
            pendingCount = 0
        }
        if count >= size {
            let blocks = count / size
            consume(base, blocks: blocks)
            base += blocks * size
            count -= blocks * size
        }
        if count > 0 {
            pending.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: base, byteCount: count) }
            pendingCount = count
        }
    }
}
