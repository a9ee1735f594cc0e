#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A shared secret that HTTP clients present as `Authorization: Bearer TOKEN`: what guards a
/// scrape endpoint reachable from other machines (CURVE covers ZeroMQ only). Kept in a file of
/// its own, mode 0600 like a secret key (`homepwner keys init` writes `metrics.token`); Prometheus
/// reads the same file (`authorization: credentials_file:`).
public struct BearerToken: Sendable, Equatable {
    /// The token's bytes (printable ASCII, no spaces).
    public let bytes: [UInt8]

    /// The fewest characters a token may have.
    public static let minimumLength = 16

    /// A token of `bytes`; nil unless they are 16-256 printable ASCII characters without spaces.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard (Self.minimumLength...256).contains(bytes.count), bytes.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
        self.bytes = bytes
    }

    /// A new random token: 32 bytes from the system's secure generator, as 64 hex digits.
    public static func generate() -> BearerToken {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<32).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
        return BearerToken(hex)!
    }

    /// Whether `presented` is this token, in time that does not depend on where they differ.
    public func matches(_ presented: some Collection<UInt8>) -> Bool {
        guard presented.count == bytes.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(bytes, presented) { difference |= a ^ b }
        return difference == 0
    }

    /// Reads a token file: one line (a final newline is ignored); refuses a file group or
    /// others can access, as for secret keys, naming the file and the `chmod 600` that fixes it.
    public static func load(file path: String) throws -> BearerToken {
        let (bytes, info) = try PosixFile.read(path, limit: 4096)
        let mode = UInt32(info.st_mode) & 0o7777
        guard mode & 0o077 == 0 else { throw KeyFileError.insecureMode(path: path, mode: mode) }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        guard let token = BearerToken(text) else {
            throw KeyFileError.malformed(
                path: path, line: 1,
                reason: "a bearer token is one line of \(minimumLength)-256 printable characters without spaces "
                    + "(homepwner keys init writes one as metrics.token)")
        }
        return token
    }

    /// Writes the token to `path` (mode 0600, with `owner` when given) as one line; never
    /// overwrites an existing file.
    public func save(file path: String, owner: FileOwner? = nil) throws {
        try PosixFile.writeAtomically(path, bytes + [10], mode: 0o600, replace: false, owner: owner)
    }
}
