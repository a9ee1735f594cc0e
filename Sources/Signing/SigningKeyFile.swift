import CurveAuth
import Foundation

/// A signing key file's contents, in the spirit of the CURVE certificates (`CurveCertificate`):
/// a text file people can read, a fixed first line, comments, then `property = value` lines.
///
///     # homepwner signing key (Ed25519)
///     # Public key: give this file to whoever verifies what the key signs (backup manifests).
///     # Written 2026-03-01T10:00:00Z by homepwner.
///     name = backup
///     public-key = 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=
///
/// `NAME.sign.pub` holds the public key; `NAME.sign.secret` (mode 0600) adds
/// `secret-key = <base64 of 64 bytes>`, libsodium's secret key (the 32-byte seed, then the
/// public key). Keys are standard base64 with `=` padding. The first line must be exactly
/// `# homepwner signing key (Ed25519)`; after it, blank lines and lines starting with `#` are
/// skipped; `name` and `public-key` are required, each property at most once, and any other
/// property is refused (only homepwner writes these files: a typo should fail at its line).
public struct SigningKeyFile: Sendable, Equatable {
    /// The first line of every signing key file.
    public static let header = "# homepwner signing key (Ed25519)"

    /// The key's name (`CurveKeyPair.isValidName`: 1-64 of `A-Z a-z 0-9 . _ -`).
    public var name: String
    /// The public key.
    public var publicKey: SigningPublicKey
    /// The key pair: present in a secret file only.
    public var keyPair: SigningKeyPair?

    /// A public key file's contents.
    public init(name: String, publicKey: SigningPublicKey) {
        self.name = name
        self.publicKey = publicKey
        keyPair = nil
    }

    /// A secret key file's contents.
    public init(name: String, keyPair: SigningKeyPair) {
        self.name = name
        publicKey = keyPair.publicKey
        self.keyPair = keyPair
    }

    /// Parses a key file's text; `path` names the file in errors, which also give the 1-based
    /// line to blame (0 for what is missing) and never quote a secret.
    public init(parsing text: String, path: String) throws(KeyFileError) {
        let lines = Self.lines(of: text)
        guard lines.first == Self.header else {
            throw .malformed(
                path: path, line: 1,
                reason: "the first line is not '\(Self.header)': not a homepwner signing key file "
                    + "(`homepwner keys sign-gen NAME` writes NAME.sign.pub and NAME.sign.secret; CURVE keys are NAME.key and NAME.key_secret)")
        }
        var name: String?
        var publicKey: (key: SigningPublicKey, line: Int)?
        var secretKey: (bytes: [UInt8], line: Int)?
        for (index, line) in lines.enumerated().dropFirst() {
            let number = index + 1
            let content = line.trimmingCharacters(in: .whitespaces)
            if content.isEmpty || content.hasPrefix("#") { continue }
            // The property's name only: a line without '=' could be part of a secret.
            guard let equals = content.firstIndex(of: "=") else {
                throw .malformed(path: path, line: number, reason: "expected 'property = value' (name, public-key or secret-key)")
            }
            let property = content[..<equals].trimmingCharacters(in: .whitespaces)
            // A property is one short word: anything else (`secret-key BASE64=` without its
            // '=') could be part of a secret, so it is not quoted either.
            guard (1...24).contains(property.utf8.count), property.utf8.allSatisfy(Self.isWordByte) else {
                throw .malformed(path: path, line: number, reason: "expected 'property = value' (name, public-key or secret-key)")
            }
            let value = Substring(content[content.index(after: equals)...].trimmingCharacters(in: .whitespaces))
            switch property {
            case "name":
                guard name == nil else { throw .malformed(path: path, line: number, reason: "a second 'name' line") }
                guard CurveKeyPair.isValidName(String(value)) else {
                    throw .malformed(path: path, line: number, reason: "name '\(value)' is not 1-64 of A-Z a-z 0-9 . _ - (not starting with . or -)")
                }
                name = String(value)
            case "public-key":
                guard publicKey == nil else { throw .malformed(path: path, line: number, reason: "a second 'public-key' line") }
                let bytes = try Self.decode(value, property: property, count: SigningPublicKey.byteCount, path: path, line: number)
                publicKey = (SigningPublicKey(bytes: bytes)!, number)
            case "secret-key":
                guard secretKey == nil else { throw .malformed(path: path, line: number, reason: "a second 'secret-key' line") }
                let bytes = try Self.decode(value, property: property, count: SigningKeyPair.secretKeyByteCount, path: path, line: number)
                secretKey = (bytes, number)
            default:
                throw .malformed(path: path, line: number, reason: "unknown property '\(property)' (expected name, public-key or secret-key)")
            }
        }
        guard let name else { throw .malformed(path: path, line: 0, reason: "no 'name = NAME' line") }
        guard let publicKey else { throw .malformed(path: path, line: 0, reason: "no 'public-key = BASE64' line") }
        self.init(name: name, publicKey: publicKey.key)
        if let secretKey {
            guard let keyPair = SigningKeyPair(secretKey: secretKey.bytes) else {
                throw .malformed(
                    path: path, line: secretKey.line,
                    reason: "secret-key is not an Ed25519 secret key: its second half is not the public key its seed makes (the file was edited or damaged)")
            }
            guard keyPair.publicKey == publicKey.key else {
                throw .malformed(
                    path: path, line: secretKey.line, reason: "secret-key does not belong to public-key on line \(publicKey.line) (the file was edited or mixed up)")
            }
            self.keyPair = keyPair
        }
    }

    /// The file's text: the header, comments on what the file is and when it was written, the
    /// name, the public key and, when `includeSecret` and there is one, the secret key.
    public func text(includeSecret: Bool, written date: Date = Date()) -> String {
        let stamp = ISO8601DateFormatter().string(from: date)
        var text = Self.header + "\n"
        if includeSecret, keyPair != nil {
            text += "# SECRET key: keep this file mode 0600 and never share it; \(name).sign.pub is the half to give out.\n"
        } else {
            text += "# Public key: give this file to whoever verifies what the key signs (backup manifests).\n"
        }
        text += "# Fingerprint \(publicKey.fingerprint). Written \(stamp) by homepwner.\n"
        text += "name = \(name)\n"
        text += "public-key = \(publicKey.base64)\n"
        if includeSecret, let keyPair {
            text += "secret-key = \(Sodium.base64(keyPair.secretKey))\n"
        }
        return text
    }

    /// Whether `byte` may be part of a property's name: `A-Z a-z 0-9 _ -`.
    private static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    /// A key's bytes from its base64 value, exactly `count` of them.
    private static func decode(_ value: Substring, property: String, count: Int, path: String, line: Int) throws(KeyFileError) -> [UInt8] {
        guard let bytes = Sodium.unbase64(value) else {
            throw .malformed(path: path, line: line, reason: "\(property) is not base64 (A-Z a-z 0-9 + /, '=' padding, no spaces)")
        }
        guard bytes.count == count else {
            let what = count == SigningPublicKey.byteCount ? "an Ed25519 public key" : "an Ed25519 secret key"
            throw .malformed(
                path: path, line: line,
                reason: "\(property) is \(bytes.count) bytes; \(what) is \(count) (\((count + 2) / 3 * 4) base64 characters)")
        }
        return bytes
    }

    /// The lines of `text`, each without its "\n" or "\r\n"; split on scalars, as a Character
    /// "\r\n" is one and no "\n".
    private static func lines(of text: String) -> [String] {
        text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var line = Substring(line)
            while line.last == "\r" { line = line.dropLast() }
            return String(line)
        }
    }
}
