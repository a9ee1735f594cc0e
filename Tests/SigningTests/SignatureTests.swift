import Digest
import Testing

@testable import Signing

/// Signing and verifying: round trips, what must fail, and RFC 8032's vectors reproduced from
/// their seeds to show the signatures are standard Ed25519 that any other implementation checks.
@Suite struct SignatureTests {
    @Test func aSignatureVerifiesWithItsPublicKey() {
        let keys = SigningKeyPair.generate()
        let message = Array("manifest v1\nitems.db sha256:00ff\n".utf8)
        let signature = keys.sign(message)
        #expect(signature.count == 64)
        #expect(keys.publicKey.bytes.count == 32)
        #expect(keys.secretKey.count == 64)
        #expect(SigningKeyPair.verify(signature: signature, message: message, publicKey: keys.publicKey))
        #expect(keys.publicKey.verify(signature: signature, message: message))
        // Ed25519 is deterministic: the same key and message give the same signature.
        #expect(keys.sign(message) == signature)
        // The empty message is a message like any other.
        #expect(keys.publicKey.verify(signature: keys.sign([]), message: []))
    }

    @Test func aFlippedBitInTheMessageOrTheSignatureFailsVerification() {
        let keys = SigningKeyPair.generate()
        let message = Array("backup 2026-03-01 blobs 1234".utf8)
        let signature = keys.sign(message)
        for index in message.indices {
            var changed = message
            changed[index] ^= 0x01
            #expect(!keys.publicKey.verify(signature: signature, message: changed), "message byte \(index)")
        }
        for index in signature.indices {
            var changed = signature
            changed[index] ^= 0x80
            #expect(!keys.publicKey.verify(signature: changed, message: message), "signature byte \(index)")
        }
        // A message one byte longer or shorter, a signature cut or padded.
        #expect(!keys.publicKey.verify(signature: signature, message: message + [0]))
        #expect(!keys.publicKey.verify(signature: signature, message: Array(message.dropLast())))
        #expect(!keys.publicKey.verify(signature: Array(signature.dropLast()), message: message))
        #expect(!keys.publicKey.verify(signature: signature + [0], message: message))
        #expect(!keys.publicKey.verify(signature: [], message: message))
    }

    @Test func anotherKeysPublicKeyFailsVerification() {
        let signer = SigningKeyPair.generate()
        let other = SigningKeyPair.generate()
        #expect(signer.publicKey != other.publicKey)
        let message = Array("manifest".utf8)
        #expect(!SigningKeyPair.verify(signature: signer.sign(message), message: message, publicKey: other.publicKey))
        #expect(SigningKeyPair.verify(signature: other.sign(message), message: message, publicKey: other.publicKey))
    }

    /// RFC 8032 section 7.1, TEST 1 (the empty message), from its 32-byte secret key, which
    /// libsodium calls the seed (`crypto_sign_seed_keypair`).
    @Test func rfc8032Test1IsReproducedExactlyFromItsSeed() throws {
        let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        let keys = try #require(SigningKeyPair(seed: seed))
        #expect(keys.publicKey.bytes == hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let signature = keys.sign([])
        #expect(signature == hex(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"))
        #expect(SigningKeyPair.verify(signature: signature, message: [], publicKey: keys.publicKey))
        // libsodium's secret key is the seed, then the public key.
        #expect(keys.secretKey == seed + keys.publicKey.bytes)
        #expect(keys.seed == seed)
    }

    /// RFC 8032 section 7.1, TEST 2 (one byte, 0x72).
    @Test func rfc8032Test2IsReproducedExactlyFromItsSeed() throws {
        let keys = try #require(SigningKeyPair(seed: hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")))
        #expect(keys.publicKey.bytes == hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"))
        #expect(keys.sign([0x72]) == hex(
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"))
    }

    @Test func keysAreOnlyMadeFromBytesOfTheRightLength() {
        #expect(SigningKeyPair(seed: [UInt8](repeating: 1, count: 31)) == nil)
        #expect(SigningKeyPair(seed: [UInt8](repeating: 1, count: 33)) == nil)
        #expect(SigningPublicKey(bytes: [UInt8](repeating: 1, count: 31)) == nil)
        #expect(SigningPublicKey(bytes: [UInt8](repeating: 1, count: 64)) == nil)
        let keys = SigningKeyPair.generate()
        #expect(SigningKeyPair(secretKey: keys.secretKey) == keys)
        // A secret key whose second half is another key's public key is refused.
        #expect(SigningKeyPair(secretKey: keys.seed + SigningKeyPair.generate().publicKey.bytes) == nil)
        #expect(SigningKeyPair(secretKey: Array(keys.secretKey.dropLast())) == nil)
    }

    @Test func theFingerprintIsTheFirst16HexDigitsOfTheKeysSHA256() throws {
        let keys = try #require(SigningKeyPair(seed: hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")))
        let checksum = SHA256.checksum(keys.publicKey.bytes)  // "sha256:<64 hex>"
        #expect(keys.fingerprint == "ed25519:" + checksum.dropFirst("sha256:".count).prefix(16))
        #expect(keys.fingerprint.count == "ed25519:".count + 16)
        #expect(SigningKeyPair.generate().fingerprint != keys.fingerprint)
    }

    @Test func base64RoundTripsAndNothingPrintsTheSecret() throws {
        let keys = SigningKeyPair.generate()
        let text = keys.publicKey.base64
        #expect(text.count == 44 && text.hasSuffix("="))
        #expect(SigningPublicKey(base64: text) == keys.publicKey)
        #expect(SigningPublicKey(base64: String(text.dropLast())) == nil)  // no padding
        #expect(SigningPublicKey(base64: " " + text) == nil)
        #expect(SigningPublicKey(base64: Sodium.base64([UInt8](repeating: 7, count: 31))) == nil)
        let secret = Sodium.base64(keys.secretKey)
        for shown in ["\(keys)", String(reflecting: keys), { var out = ""; dump(keys, to: &out); return out }()] {
            #expect(shown.contains(keys.fingerprint), "\(shown)")
            #expect(!shown.contains(secret) && !shown.contains("\(keys.secretKey)"), "\(shown)")
        }
    }
}

/// The bytes of a hex string (test vectors).
func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
