import Testing
import Digest

@Suite struct SHA256Tests {
    @Test func knownDigestsMatchFIPS180Vectors() {
        #expect(SHA256.checksum([]) == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.checksum(Array("abc".utf8)) == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.checksum(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
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
        // "a" × 1,000,000 (FIPS 180-2 appendix B.3).
        #expect(SHA256.checksum([UInt8](repeating: 0x61, count: 1_000_000))
            == "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

@Suite struct XXHash64Tests {
    @Test func knownDigestsAndStreamingMatch() {
        #expect(XXHash64.checksum([]) == "xxh64:ef46db3751d8e999")
        #expect(XXHash64.checksum(Array("a".utf8)) == "xxh64:d24ec4f1a98c6e5b")
        #expect(XXHash64.checksum(Array("abc".utf8)) == "xxh64:44bc2cf5ad770999")
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
