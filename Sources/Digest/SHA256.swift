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

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

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
            Self.k.withUnsafeBufferPointer { k in
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
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                     state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
        }
    }
}

extension UInt32 {
    @_transparent fileprivate func rotr(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
