import Digest
import Foundation
import Testing
import TestSupport

@Suite struct SHA256Tests {
    /// FIPS 180-2 appendix B and the NIST example messages, on both compressions.
    @Test(arguments: [false, true])
    func knownDigestsMatchFIPS180Vectors(portable: Bool) {
        #expect(SHA256.checksum([], portable: portable) == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.checksum(Array("abc".utf8), portable: portable)
                == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // 448 bits.
        #expect(
            SHA256.checksum(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8), portable: portable)
                == "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // 896 bits.
        let long = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(
            SHA256.checksum(Array(long.utf8), portable: portable)
                == "sha256:cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        // "a" × 1,000,000 (FIPS 180-2 appendix B.3).
        #expect(
            SHA256.checksum([UInt8](repeating: 0x61, count: 1_000_000), portable: portable)
                == "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func streamingInOddPiecesEqualsOneShot() {
        let data = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        var hash = SHA256()
        var start = 0
        for piece in [1, 63, 64, 65, 1000, 4095, 50_000] where start < data.count {
            let end = min(data.count, start + piece)
            hash.update(data[start..<end])
            start = end
        }
        hash.update(data[start...])
        #expect(hash.checksum() == SHA256.checksum(data))
    }

    /// Every padding case around the first few block boundaries.
    @Test func hardwareEqualsPortableForEveryLengthUpTo300() {
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
        let mismatched = (0...300).filter { length in
            let bytes = Array(data[..<length])
            return SHA256.checksum(bytes) != SHA256.checksum(bytes, portable: true)
        }
        #expect(mismatched.isEmpty, "lengths \(mismatched)")
    }

    /// Random buffers up to 4 MiB, each hashed one-shot on the Swift compression and streamed
    /// through both in random pieces (including the 0, 1, 63, 64 and 65 byte edge cases).
    @Test func hardwareEqualsPortableOnRandomBuffersInRandomPieces() {
        var random = SplitMix64(seed: 0x5EED_D16E_57)
        for round in 0..<8 {
            let count = round == 0 ? 4 << 20 : Int.random(in: 0...(4 << 20), using: &random)
            var data = [UInt8](repeating: 0, count: count)
            for i in stride(from: 0, to: count, by: 8) {
                let word = random.next()
                for j in i..<min(count, i + 8) { data[j] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(j - i))) }
            }
            let expected = SHA256.checksum(data, portable: true)
            for portable in [false, true] {
                var hash = SHA256(portable: portable)
                var start = 0
                while start < data.count {
                    let piece: Int
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: piece = [0, 1, 63, 64, 65][Int.random(in: 0..<5, using: &random)]
                    case 1: piece = Int.random(in: 0..<200, using: &random)
                    case 2: piece = Int.random(in: 0..<70_000, using: &random)
                    default: piece = Int.random(in: 0..<1_000_000, using: &random)
                    }
                    let end = min(data.count, start + piece)
                    // Both entry points: slices and raw buffers.
                    if piece % 2 == 0 {
                        hash.update(data[start..<end])
                    } else {
                        data[start..<end].withUnsafeBytes { hash.update($0) }
                    }
                    start = end
                }
                #expect(hash.checksum() == expected, "round \(round), \(count) bytes, portable \(portable)")
            }
            #expect(SHA256.checksum(data) == expected, "round \(round), \(count) bytes, one shot")
        }
    }

    /// The SHA extensions are used wherever the CPU has them, so the fast path cannot silently
    /// stop being taken.
    @Test func usesTheSHAExtensionsExactlyWhenTheCPUHasThem() throws {
        #if arch(x86_64) && os(Linux)
        let cpuinfo = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let line = try #require(cpuinfo.split(separator: "\n").first { $0.hasPrefix("flags") })
        let flags = Set(line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ":" }).map(String.init))
        let expected = flags.contains("sha_ni") && flags.contains("ssse3") && flags.contains("sse4_1")
        #expect(SHA256.usesHardware == expected, "cpuinfo sha_ni \(flags.contains("sha_ni"))")
        #elseif !arch(x86_64) && !arch(i386)
        #expect(!SHA256.usesHardware)
        #endif
    }
}


@Suite struct XXHash64Tests {
    @Test func knownDigestsAndStreamingMatch() {
        #expect(XXHash64.checksum([]) == "xxh64:ef46db3751d8e999")
        #expect(XXHash64.checksum(Array("a".utf8)) == "xxh64:d24ec4f1a98c6e5b")
        #expect(XXHash64.checksum(Array("abc".utf8)) == "xxh64:44bc2cf5ad770999")
        // Whole stripes and a tail (python-xxhash: xxh64(bytes((i*31+7)&255 for i in range(100003)))).
        #expect(XXHash64.checksum((0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) == "xxh64:c333c0bff6f9efdb")
        let data = (0..<10_007).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) }
        var hash = XXHash64()
        var start = 0
        for piece in [1, 3, 31, 32, 33, 64, 1000] where start < data.count {
            let end = min(data.count, start + piece)
            data[start..<end].withUnsafeBytes { hash.update($0) }
            start = end
        }
        data[start...].withUnsafeBytes { hash.update($0) }
        #expect(hash.checksum() == XXHash64.checksum(data))
        var changed = data
        changed[5000] ^= 1
        #expect(XXHash64.checksum(changed) != XXHash64.checksum(data))
    }
}
