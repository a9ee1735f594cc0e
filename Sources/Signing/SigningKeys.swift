internal import CSodium
import Digest

/// An Ed25519 public key (32 bytes): what verifies the signatures of its `SigningKeyPair`.
/// Shareable; stored as `NAME.sign.pub` (`SigningKeyFile`).
public struct SigningPublicKey: Sendable, Hashable, CustomStringConvertible {
    /// An Ed25519 public key's length.
    public static let byteCount = Int(crypto_sign_ed25519_PUBLICKEYBYTES)

    /// The key's 32 bytes.
    public let bytes: [UInt8]

    /// The key of `bytes`; nil unless they are 32.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// The key of its base64 text (standard alphabet, `=` padding, as the key files and
    /// `base64` write it); nil when the text is not base64 of 32 bytes.
    public init?(base64 text: String) {
        guard let bytes = Sodium.unbase64(Substring(text)) else { return nil }
        self.init(bytes: bytes)
    }

    /// The key as standard base64 (44 characters).
    public var base64: String { Sodium.base64(bytes) }

    /// What people compare to tell keys apart: `ed25519:` and the first 16 hex digits of the
    /// SHA-256 of the key's bytes (`ed25519:3f0a9c…`). For display, not for checking a key:
    /// compare the whole key for that.
    public var fingerprint: String {
        var hash = SHA256()
        hash.update(bytes)
        let digits = Array("0123456789abcdef")
        let hex = hash.finalize().prefix(8).map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined()
        return "ed25519:" + hex
    }

    /// Whether `signature` is this key's detached Ed25519 signature of `message`
    /// (`crypto_sign_ed25519_verify_detached`); false for a signature that is not 64 bytes.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        Sodium.ready()
        guard signature.count == SigningKeyPair.signatureByteCount else { return false }
        return Sodium.withBytes(message) { pointer, count in
            crypto_sign_ed25519_verify_detached(signature, pointer, UInt64(count), bytes) == 0
        }
    }

    public var description: String { "Ed25519 public key \(fingerprint)" }
}

/// An Ed25519 key pair (libsodium): signs small messages (a backup's manifest) with detached
/// 64-byte signatures that anyone holding the public key can check. Stored as `NAME.sign.secret`
/// (mode 0600) and `NAME.sign.pub` (`SigningKeyFile`, `save(directory:name:)`).
///
/// Its description, debug description and mirror (`dump`) show the public key only, never the secret.
public struct SigningKeyPair: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A detached signature's length.
    public static let signatureByteCount = Int(crypto_sign_ed25519_BYTES)
    /// A secret key's length, in libsodium's layout: the 32-byte seed, then the public key.
    public static let secretKeyByteCount = Int(crypto_sign_ed25519_SECRETKEYBYTES)
    /// A seed's length: the 32 random bytes a key pair is made from (RFC 8032's "secret key").
    public static let seedByteCount = Int(crypto_sign_ed25519_SEEDBYTES)

    /// The public half, to give to whoever verifies.
    public let publicKey: SigningPublicKey
    /// The 64-byte secret key (seed, then public key); kept inside the module and its files.
    let secretKey: [UInt8]

    private init(publicKey: [UInt8], secretKey: [UInt8]) {
        self.publicKey = SigningPublicKey(bytes: publicKey)!
        self.secretKey = secretKey
    }

    /// A new random key pair (`crypto_sign_ed25519_keypair`, from the system's secure random source).
    public static func generate() -> SigningKeyPair {
        Sodium.ready()
        var publicKey = [UInt8](repeating: 0, count: SigningPublicKey.byteCount)
        var secretKey = [UInt8](repeating: 0, count: secretKeyByteCount)
        let status = crypto_sign_ed25519_keypair(&publicKey, &secretKey)
        precondition(status == 0, "crypto_sign_ed25519_keypair returned \(status)")
        return SigningKeyPair(publicKey: publicKey, secretKey: secretKey)
    }

    /// The key pair a 32-byte seed makes (`crypto_sign_ed25519_seed_keypair`): the same seed
    /// always makes the same keys, as RFC 8032 derives them. Nil unless the seed is 32 bytes.
    public init?(seed: [UInt8]) {
        guard seed.count == Self.seedByteCount else { return nil }
        Sodium.ready()
        var publicKey = [UInt8](repeating: 0, count: SigningPublicKey.byteCount)
        var secretKey = [UInt8](repeating: 0, count: Self.secretKeyByteCount)
        guard crypto_sign_ed25519_seed_keypair(&publicKey, &secretKey, seed) == 0 else { return nil }
        self.init(publicKey: publicKey, secretKey: secretKey)
    }

    /// The key pair of a 64-byte secret key in libsodium's layout; nil unless it is 64 bytes
    /// and its second half is the public key its seed (first half) makes, so a secret key that
    /// was cut, edited or spliced from two keys is never used.
    init?(secretKey: [UInt8]) {
        guard secretKey.count == Self.secretKeyByteCount, let derived = SigningKeyPair(seed: Array(secretKey.prefix(Self.seedByteCount))),
            Sodium.constantTimeEqual(derived.secretKey, secretKey)
        else { return nil }
        self = derived
    }

    /// The seed the key pair was made from (the first half of the secret key).
    var seed: [UInt8] { Array(secretKey.prefix(Self.seedByteCount)) }

    /// The public key's fingerprint (`SigningPublicKey.fingerprint`).
    public var fingerprint: String { publicKey.fingerprint }

    /// The detached Ed25519 signature of `message` (`crypto_sign_ed25519_detached`): 64 bytes,
    /// the same every time for the same key and message. Meant for small messages (a manifest):
    /// the whole message is in memory; sign a digest of anything large.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        Sodium.ready()
        var signature = [UInt8](repeating: 0, count: Self.signatureByteCount)
        var length: UInt64 = 0
        let status = Sodium.withBytes(message) { pointer, count in
            crypto_sign_ed25519_detached(&signature, &length, pointer, UInt64(count), secretKey)
        }
        precondition(status == 0 && length == UInt64(Self.signatureByteCount), "crypto_sign_ed25519_detached returned \(status)")
        return signature
    }

    /// Whether `signature` is `publicKey`'s detached Ed25519 signature of `message`; false for
    /// any change to either, a signature of another key, or one that is not 64 bytes.
    public static func verify(signature: [UInt8], message: [UInt8], publicKey: SigningPublicKey) -> Bool {
        publicKey.verify(signature: signature, message: message)
    }

    /// Equal when both halves are, compared in constant time.
    public static func == (a: SigningKeyPair, b: SigningKeyPair) -> Bool {
        a.publicKey == b.publicKey && Sodium.constantTimeEqual(a.secretKey, b.secretKey)
    }

    public var description: String { "Ed25519 key pair \(fingerprint)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKey]) }
}
