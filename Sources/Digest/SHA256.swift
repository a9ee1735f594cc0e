internal import CDigest

/// SHA-256 (FIPS 180-4), streaming; the blob checksums ("sha256:<hex>").
///
/// Written here because the toolchain's Foundation on Linux has no digest API and the
/// project takes no outside packages. Whole blocks go to the x86 SHA extensions (CDigest) when
/// CPUID reports them, and to the Swift compression below otherwise.
public struct SHA256: Sendable, BlockDigest {
    static let blockSize = 64
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19)
    var pending = [UInt8](repeating: 0, count: 64)
    var pendingCount = 0
    var length: UInt64 = 0
    /// Whole blocks go to `hp_sha256_hw_blocks`.
    private let hardware: Bool

    /// Whether this CPU has the SHA extensions, so that digests use them (asked once).
    public static var usesHardware: Bool { hp_sha256_hw_available() != 0 }

    /// A fresh digest.
    public init() {
        self.init(portable: false)
    }

    /// A fresh digest; `portable` keeps it on the Swift compression even where the SHA
    /// extensions are available (for tests comparing the two).
    public init(portable: Bool) {
        hardware = !portable && Self.usesHardware
    }

    /// The digest of `bytes` as "sha256:<64 hex digits>".
    public static func checksum(_ bytes: [UInt8]) -> String {
        checksum(bytes, portable: false)
    }

    /// The digest of `bytes` as "sha256:<64 hex digits>", on the Swift compression if `portable`.
    public static func checksum(_ bytes: [UInt8], portable: Bool) -> String {
        var hash = SHA256(portable: portable)
        hash.update(bytes)
        return hash.checksum()
    }

    /// Adds bytes.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { update(UnsafeRawBufferPointer($0)) }
    }

    /// Adds bytes.
    public mutating func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBufferPointer { update(UnsafeRawBufferPointer($0)) }
    }

    /// Adds bytes.
    // Optimised even in debug builds (the tests hash hundreds of MiB).
    @_optimize(speed)
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        absorb(bytes)
    }

    /// Pads, finishes and returns the 32-byte digest; the value must not be updated afterwards.
    public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var padding: [UInt8] = [0x80]
        let padCount = (pendingCount < 56 ? 55 - pendingCount : 119 - pendingCount)
        padding += [UInt8](repeating: 0, count: padCount)
        for shift in stride(from: 56, through: 0, by: -8) { padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let savedLength = length
        update(padding)
        length = savedLength
        precondition(pendingCount == 0, "SHA-256 padding left \(pendingCount) bytes")
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32($0))) } }
    }

    /// Finishes and returns "sha256:<hex>".
    public mutating func checksum() -> String {
        "sha256:" + finalize().map { byte in
            let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined()
    }

    /// Compresses `blocks` whole blocks at `data` into the state.
    @_optimize(speed)
    mutating func consume(_ data: UnsafeRawPointer, blocks: Int) {
        if hardware {
            withUnsafeMutablePointer(to: &state) { tuple in
                tuple.withMemoryRebound(to: UInt32.self, capacity: 8) { words in
                    hp_sha256_hw_blocks(words, data.assumingMemoryBound(to: UInt8.self), blocks)
                }
            }
        } else {
            for offset in stride(from: 0, to: blocks * 64, by: 64) { compressPortable(data + offset) }
        }
    }

    @_optimize(speed)
    private mutating func compressPortable(_ block: UnsafeRawPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 {
                w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
            }
            for i in 16..<64 {
                let s0 = w[i - 15].rotr(7) ^ w[i - 15].rotr(18) ^ (w[i - 15] >> 3)
                let s1 = w[i - 2].rotr(17) ^ w[i - 2].rotr(19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            // The round constants, from CDigest's table (the one the SHA extensions use).
            let k = hp_sha256_round_constants()!
            for i in 0..<64 {
                let s1 = e.rotr(6) ^ e.rotr(11) ^ e.rotr(25)
                let ch = (e & f) ^ (~e & g)
                let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                let s0 = a.rotr(2) ^ a.rotr(13) ^ a.rotr(22)
                let maj = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ maj
                h = g; g = f; f = e; e = d &+ t1
                d = c; c = b; b = a; a = t1 &+ t2
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                     state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
        }
    }
}

extension UInt32 {
    @_transparent fileprivate func rotr(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
