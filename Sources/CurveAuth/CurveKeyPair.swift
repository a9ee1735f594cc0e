#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ZMQ

/// A CURVE key pair (Z85), stored as `NAME.key` (public key, shareable) and `NAME.key_secret`
/// (both keys, mode 0600) in the certificate format czmq and pyzmq use.
public struct CurveKeyPair: Sendable, Equatable {
    /// The Z85 public key: what servers list in their allowed keys, and the User-Id of this
    /// key's messages.
    public let publicKey: String
    /// The Z85 secret key.
    public let secretKey: String

    /// A key pair from its two Z85 keys; throws when they are not keys or do not belong together.
    public init(publicKey: String, secretKey: String) throws {
        guard Z85.isCurveKey(publicKey), Z85.isCurveKey(secretKey) else {
            throw KeyFileError.malformed(path: "key pair", line: 0, reason: "keys must be 40-character Z85 strings")
        }
        guard try ZMQ.curvePublicKey(secretKey: secretKey) == publicKey else {
            throw KeyFileError.malformed(path: "key pair", line: 0, reason: "the secret key does not belong to the public key")
        }
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    private init(checked publicKey: String, _ secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new random key pair (`zmq_curve_keypair`); throws when libzmq lacks CURVE.
    public static func generate() throws -> CurveKeyPair {
        let (publicKey, secretKey) = try ZMQ.curveKeyPair()
        return CurveKeyPair(checked: publicKey, secretKey)
    }

    /// The public certificate's file name for `name`: `NAME.key`.
    public static func publicFile(directory: String, name: String) -> String {
        join(directory, name + ".key")
    }

    /// The secret certificate's file name for `name`: `NAME.key_secret`.
    public static func secretFile(directory: String, name: String) -> String {
        join(directory, name + ".key_secret")
    }

    /// True when `name` can name key files and allowed-keys entries: 1…64 of `A-Z a-z 0-9 . _ -`,
    /// not starting with `.` or `-`.
    public static func isValidName(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count), let first = name.utf8.first, first != UInt8(ascii: "."), first != UInt8(ascii: "-") else {
            return false
        }
        return name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }
    }

    /// Writes `NAME.key` (mode 0644) and `NAME.key_secret` (created 0600) in `directory`;
    /// refuses, writing nothing, when either exists. Each file appears whole or not at all.
    /// With `secretOwner`, the secret file belongs to that user and group (a container's user,
    /// which must read it); only root may give a file away.
    ///
    /// - Returns: The two paths.
    @discardableResult
    public func save(directory: String, name: String, secretOwner: FileOwner? = nil) throws -> (publicFile: String, secretFile: String) {
        guard Self.isValidName(name) else {
            throw KeyFileError.malformed(path: name, line: 0, reason: "a key name is 1-64 of A-Z a-z 0-9 . _ - (not starting with . or -)")
        }
        let publicPath = Self.publicFile(directory: directory, name: name)
        let secretPath = Self.secretFile(directory: directory, name: name)
        for path in [publicPath, secretPath] where PosixFile.exists(path) { throw KeyFileError.exists(path: path) }
        let certificate = CurveCertificate(publicKey: publicKey, secretKey: secretKey, metadata: [("name", name)])
        try PosixFile.writeAtomically(
            secretPath, Array(certificate.text(includeSecret: true).utf8), mode: 0o600, replace: false, owner: secretOwner)
        do {
            try PosixFile.writeAtomically(publicPath, Array(certificate.text(includeSecret: false).utf8), mode: 0o644, replace: false)
        } catch {
            // Both files or neither: a lone secret file would make the next save refuse.
            PosixFile.remove(secretPath)
            throw error
        }
        return (publicPath, secretPath)
    }

    /// Loads a secret certificate (`NAME.key_secret`); refuses one that group or others can
    /// read or write, naming the file, its mode and the `chmod 600` that fixes it.
    public static func load(secretFile path: String) throws -> CurveKeyPair {
        let (bytes, info) = try PosixFile.read(path, limit: 64 << 10)
        let mode = UInt32(info.st_mode) & 0o7777
        guard mode & 0o077 == 0 else { throw KeyFileError.insecureMode(path: path, mode: mode) }
        let certificate = try CurveCertificate(parsing: String(decoding: bytes, as: UTF8.self), path: path)
        guard let secretKey = certificate.secretKey else {
            throw KeyFileError.malformed(path: path, line: 0, reason: "no secret-key: this is a public certificate (use the .key_secret file)")
        }
        // CurveCertificate checked that the two keys belong together.
        return CurveKeyPair(checked: certificate.publicKey, secretKey)
    }

    /// The public key of a certificate file, public (`NAME.key`) or secret; a secret file's
    /// mode is checked as in `load(secretFile:)`.
    public static func loadPublicKey(file path: String) throws -> String {
        let (bytes, info) = try PosixFile.read(path, limit: 64 << 10)
        let certificate = try CurveCertificate(parsing: String(decoding: bytes, as: UTF8.self), path: path)
        let mode = UInt32(info.st_mode) & 0o7777
        if certificate.secretKey != nil, mode & 0o077 != 0 { throw KeyFileError.insecureMode(path: path, mode: mode) }
        return certificate.publicKey
    }

    private static func join(_ directory: String, _ file: String) -> String {
        directory.isEmpty ? file : (directory.hasSuffix("/") ? directory + file : directory + "/" + file)
    }
}
