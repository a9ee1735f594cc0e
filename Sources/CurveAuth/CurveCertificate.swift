import Foundation
import ZMQ

/// A CURVE certificate file in the ZPL format (ZeroMQ RFC 4) that czmq's `zcert` and pyzmq's
/// `zmq.auth.create_certificates` write and `zmq.auth.load_certificate` reads:
///
///     #   ZeroMQ CURVE Public Certificate
///     metadata
///         name = "item-service"
///     curve
///         public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
///         secret-key = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
///
/// `NAME.key` holds the public key only; `NAME.key_secret` both keys.
public struct CurveCertificate: Sendable, Equatable {
    /// The Z85 public key.
    public var publicKey: String
    /// The Z85 secret key; nil in a public certificate.
    public var secretKey: String?
    /// The `metadata` section's properties, in file order.
    public var metadata: [(name: String, value: String)]

    /// A certificate of the given keys and metadata.
    public init(publicKey: String, secretKey: String? = nil, metadata: [(name: String, value: String)] = []) {
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.metadata = metadata
    }

    public static func == (a: CurveCertificate, b: CurveCertificate) -> Bool {
        a.publicKey == b.publicKey && a.secretKey == b.secretKey
            && a.metadata.map(\.name) == b.metadata.map(\.name) && a.metadata.map(\.value) == b.metadata.map(\.value)
    }

    /// Parses a certificate's text; `path` names the file in errors.
    ///
    /// Reads the ZPL that czmq and pyzmq write: `#` comment lines, top-level section names,
    /// indented `name = value` properties (value quoted or bare). The `curve` section must hold
    /// a valid `public-key`, and a `secret-key` must match it.
    public init(parsing text: String, path: String) throws(KeyFileError) {
        var section = ""
        var publicKey: String?
        var secretKey: String?
        var metadata: [(name: String, value: String)] = []
        for (index, line) in text.fileLines.enumerated() {
            let number = index + 1
            let content = line.drop { $0 == " " || $0 == "\t" }
            if content.isEmpty || content.hasPrefix("#") { continue }
            let indented = content.count < line.count
            if !indented {
                // A section: `curve`, `metadata` (and any other, which is skipped).
                section = String(content.prefix { $0 != " " && $0 != "\t" && $0 != "=" })
                continue
            }
            guard let equals = content.firstIndex(of: "=") else {
                throw .malformed(path: path, line: number, reason: "expected 'name = value', got '\(content)'")
            }
            let name = content[..<equals].trimmingCharacters(in: .whitespaces)
            let value = try Self.value(content[content.index(after: equals)...], path: path, line: number)
            switch (section, name) {
            case ("curve", "public-key"):
                guard Z85.isCurveKey(value) else {
                    throw .malformed(path: path, line: number, reason: "public-key is not a 40-character Z85 key")
                }
                publicKey = value
            case ("curve", "secret-key"):
                // The secret itself never goes into an error message.
                guard Z85.isCurveKey(value) else {
                    throw .malformed(path: path, line: number, reason: "secret-key is not a 40-character Z85 key")
                }
                secretKey = value
            case ("metadata", _):
                metadata.append((name, value))
            default:
                continue
            }
        }
        guard let publicKey else {
            throw .malformed(path: path, line: 0, reason: "no public-key in a 'curve' section: not a CURVE certificate")
        }
        if let secretKey {
            let derived: String
            do { derived = try ZMQ.curvePublicKey(secretKey: secretKey) } catch {
                throw .malformed(path: path, line: 0, reason: "cannot check the secret key: \(error)")
            }
            guard derived == publicKey else {
                throw .malformed(path: path, line: 0, reason: "secret-key does not belong to public-key (the file was edited or mixed up)")
            }
        }
        self.init(publicKey: publicKey, secretKey: secretKey, metadata: metadata)
    }

    /// A property's value: the text between quotes, or the bare text up to a ` #` comment.
    private static func value(_ text: Substring, path: String, line: Int) throws(KeyFileError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let quote = trimmed.first, quote == "\"" || quote == "'" else {
            // Z85 contains '#', so only a '#' after whitespace starts a comment.
            if let comment = trimmed.range(of: " #") { return trimmed[..<comment.lowerBound].trimmingCharacters(in: .whitespaces) }
            return trimmed
        }
        let rest = trimmed.dropFirst()
        guard let end = rest.firstIndex(of: quote) else {
            throw .malformed(path: path, line: line, reason: "unterminated \(quote)-quoted value")
        }
        let after = rest[rest.index(after: end)...].trimmingCharacters(in: .whitespaces)
        guard after.isEmpty || after.hasPrefix("#") else {
            throw .malformed(path: path, line: line, reason: "unexpected text after the quoted value: '\(after)'")
        }
        return String(rest[..<end])
    }

    /// The file's text: a banner, `metadata`, then `curve` with the public key and, when
    /// `includeSecret`, the secret key, laid out as pyzmq and czmq write it.
    public func text(includeSecret: Bool, generated date: Date = Date()) -> String {
        let stamp = ISO8601DateFormatter().string(from: date)
        var text = "#   ****  Generated on \(stamp) by homepwner  ****\n"
        if includeSecret, secretKey != nil {
            text += """
                #   ZeroMQ CURVE **Secret** Certificate
                #   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.

                """
        } else {
            text += """
                #   ZeroMQ CURVE Public Certificate
                #   Exchange securely, or use a secure mechanism to verify the contents
                #   of this file after exchange.

                """
        }
        text += "\nmetadata\n"
        for (name, value) in metadata {
            text += "    \(name) = \"\(value)\"\n"
        }
        text += "curve\n"
        text += "    public-key = \"\(publicKey)\"\n"
        if includeSecret, let secretKey {
            text += "    secret-key = \"\(secretKey)\"\n"
        }
        return text
    }
}
