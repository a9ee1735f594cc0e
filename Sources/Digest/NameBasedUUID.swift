import Foundation

/// UUIDs named by the SHA-256 of a text (RFC 9562 version 8, "custom"): the same name gives
/// the same key, on every machine, so a retried job puts, attaches and deletes the same keys;
/// and a key of this form is one a job made, never one a client's PutImage got (version 4).
public enum NameBasedUUID {
    /// The lowercase UUID named by `name`.
    public static func make(_ name: String) -> String {
        var digest = SHA256()
        digest.update(Array(name.utf8))
        var bytes = Array(digest.finalize().prefix(16))
        bytes[6] = bytes[6] & 0x0f | 0x80  // version 8
        bytes[8] = bytes[8] & 0x3f | 0x80  // RFC 9562 variant
        return NSUUID(uuidBytes: bytes).uuidString.lowercased()
    }

    /// Whether `key` is a UUID of this form (version 8, RFC 9562 variant), in either case.
    public static func isOne(_ key: String) -> Bool {
        let scalars = Array(key.unicodeScalars)
        guard scalars.count == 36, UUID(uuidString: key) != nil else { return false }
        let variant = scalars[19]
        return scalars[14] == "8" && "89abAB".unicodeScalars.contains(variant)
    }
}
