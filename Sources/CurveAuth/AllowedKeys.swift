#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ZMQ

/// One allowed key: the role its connections get, its Z85 public key, an optional name.
public struct AllowedKey: Sendable, Equatable {
    /// What the key may do.
    public var role: Role
    /// The Z85 public key (the User-Id of its messages).
    public var publicKey: String
    /// A name for people and for `revoke`, e.g. `thumbnail-worker-1`.
    public var name: String?

    /// An entry; `publicKey` must be a Z85 CURVE key and `name` a valid key name.
    public init(role: Role, publicKey: String, name: String? = nil) {
        self.role = role
        self.publicKey = publicKey
        self.name = name
    }
}

/// A bad allowed-keys file: which file, which line (1-based) and what is wrong with it.
public struct AllowedKeysError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The file (or the label given to the parser).
    public let file: String
    /// The 1-based line; 0 when the problem is not on one line.
    public let line: Int
    /// What is wrong, e.g. "unknown role 'writer' (expected admin, worker or reader)".
    public let reason: String

    public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
}

/// The allowed-keys file: one key per line, `ROLE Z85PUBLICKEY [NAME]`, with `#` comments and
/// blank lines, e.g.
///
///     # who may call the suite
///     admin  rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7  ops-laptop
///     worker Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID  thumbnail-worker-1
///
/// Parsing is all or nothing: any bad line is an error naming it, so a service never runs on
/// half a file. Edits keep the other lines (comments included) as they were.
public struct AllowedKeys: Sendable, Equatable {
    enum Line: Sendable, Equatable {
        case entry(AllowedKey)
        /// A comment or blank line, kept verbatim.
        case text(String)
    }

    private(set) var lines: [Line]

    /// An empty set.
    public init() { lines = [] }

    /// The entries in file order.
    public var entries: [AllowedKey] {
        lines.compactMap { if case .entry(let entry) = $0 { entry } else { nil } }
    }

    /// The entry for `publicKey`, if it is allowed.
    public func entry(forKey publicKey: String) -> AllowedKey? {
        entries.first { $0.publicKey == publicKey }
    }

    /// Parses the file's text; `file` names it in errors.
    public init(parsing text: String, file: String) throws(AllowedKeysError) {
        var lines: [Line] = []
        var keyLines: [String: Int] = [:]
        var nameLines: [String: Int] = [:]
        let rawLines = text.fileLines
        for (index, line) in rawLines.enumerated() {
            let number = index + 1
            // A final newline leaves one empty piece that is not a line of the file.
            if index == rawLines.count - 1 && line.isEmpty { break }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let first = fields.first, !first.hasPrefix("#") else {
                lines.append(.text(String(line)))
                continue
            }
            func fail(_ reason: String) -> AllowedKeysError { AllowedKeysError(file: file, line: number, reason: reason) }
            guard let role = Role(rawValue: first) else {
                throw fail("unknown role '\(first)' (expected \(Role.spelledOut), then a Z85 public key and an optional name)")
            }
            guard fields.count >= 2 else { throw fail("'\(first)' needs a Z85 public key after it") }
            let key = fields[1]
            guard Z85.isCurveKey(key) else {
                throw fail("'\(key)' is not a Z85 CURVE public key (40 characters of the Z85 alphabet; got \(key.count))")
            }
            // After the key, a field starting with '#' begins a comment.
            let rest = fields.dropFirst(2).prefix { !$0.hasPrefix("#") }
            guard rest.count <= 1 else {
                throw fail("unexpected '\(rest.dropFirst().joined(separator: " "))' after the name '\(rest.first!)' (a name has no spaces)")
            }
            let name = rest.first
            if let name, !CurveKeyPair.isValidName(name) {
                throw fail("'\(name)' is not a valid name (1-64 of A-Z a-z 0-9 . _ -, not starting with . or -)")
            }
            if let earlier = keyLines[key] { throw fail("this key is already listed on line \(earlier)") }
            if let name, let earlier = nameLines[name] { throw fail("the name '\(name)' is already used on line \(earlier)") }
            keyLines[key] = number
            if let name { nameLines[name] = number }
            lines.append(.entry(AllowedKey(role: role, publicKey: key, name: name)))
        }
        self.lines = lines
    }

    /// The file's text: entries as `ROLE KEY [NAME]`, other lines as they were.
    public func serialized() -> String {
        var text = ""
        for line in lines {
            switch line {
            case .text(let verbatim):
                text += verbatim + "\n"
            case .entry(let entry):
                // Roles aligned to six columns; a longer one (capture-worker) is written whole.
                let role = entry.role.rawValue
                text += role + String(repeating: " ", count: max(0, 6 - role.count)) + " " + entry.publicKey
                if let name = entry.name { text += " " + name }
                text += "\n"
            }
        }
        return text
    }

    /// What `allow` did.
    public enum AllowOutcome: Sendable, Equatable {
        /// The key was added.
        case added
        /// The key was there; its role (or name) changed, from the given entry.
        case changed(from: AllowedKey)
        /// The key was there with this role and name already.
        case unchanged
    }

    /// Allows `entry`'s key with its role; a key already listed gets the new role (and the new
    /// name, when one is given) in place. Throws for a bad key or name, or a name another key has.
    @discardableResult
    public mutating func allow(_ entry: AllowedKey) throws(AllowedKeysError) -> AllowOutcome {
        guard Z85.isCurveKey(entry.publicKey) else {
            throw AllowedKeysError(file: "allow", line: 0, reason: "'\(entry.publicKey)' is not a Z85 CURVE public key")
        }
        if let name = entry.name {
            guard CurveKeyPair.isValidName(name) else {
                throw AllowedKeysError(file: "allow", line: 0, reason: "'\(name)' is not a valid name (1-64 of A-Z a-z 0-9 . _ -)")
            }
            if let other = entries.first(where: { $0.name == name && $0.publicKey != entry.publicKey }) {
                throw AllowedKeysError(file: "allow", line: 0, reason: "the name '\(name)' already belongs to key \(other.publicKey)")
            }
        }
        for index in lines.indices {
            guard case .entry(let existing) = lines[index], existing.publicKey == entry.publicKey else { continue }
            var updated = entry
            if updated.name == nil { updated.name = existing.name }
            if updated == existing { return .unchanged }
            lines[index] = .entry(updated)
            return .changed(from: existing)
        }
        lines.append(.entry(entry))
        return .added
    }

    /// Removes the entries whose key or name is `keyOrName`; returns what was removed (empty
    /// when nothing matched).
    @discardableResult
    public mutating func revoke(_ keyOrName: String) -> [AllowedKey] {
        var removed: [AllowedKey] = []
        lines.removeAll { line in
            guard case .entry(let entry) = line, entry.publicKey == keyOrName || entry.name == keyOrName else { return false }
            removed.append(entry)
            return true
        }
        return removed
    }
}

// The file on disk.
extension AllowedKeys {
    /// Reads and parses `file`; a missing or unreadable file is a `KeyFileError`, a bad line an
    /// `AllowedKeysError`.
    public static func load(file: String) throws -> AllowedKeys {
        try loadWithIdentity(file: file).keys
    }

    /// Reads and parses `file`, with the identity of the version read.
    static func loadWithIdentity(file: String) throws -> (keys: AllowedKeys, identity: FileIdentity) {
        let (keys, identity, _) = try loadWithInfo(file: file)
        return (keys, identity)
    }

    /// Reads and parses `file`, with the identity and `fstat` of the version read.
    static func loadWithInfo(file: String) throws -> (keys: AllowedKeys, identity: FileIdentity, info: stat) {
        let (bytes, info) = try PosixFile.read(file)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw AllowedKeysError(file: file, line: 0, reason: "not UTF-8 text")
        }
        return (try AllowedKeys(parsing: text, file: file), FileIdentity(info), info)
    }

    /// Refuses an allowed-keys file that someone other than root or this process's user could
    /// change (writable by group or others, or owned by another user): whoever can write it can
    /// let any key in, as admin. The same rule as sshd's for authorized_keys.
    static func checkSafe(file: String, _ info: stat) throws(KeyFileError) {
        let mode = UInt32(info.st_mode) & 0o7777
        if mode & 0o022 != 0 {
            throw .unsafe(path: file, reason: "has mode \(octal(mode)): group or others may write it, and whoever writes it "
                + "can let any key in; refusing it. Fix it with: chmod go-w \(file)")
        }
        let owner = UInt32(info.st_uid)
        if owner != 0 && owner != UInt32(geteuid()) {
            throw .unsafe(path: file, reason: "belongs to uid \(owner), neither root nor this process's user (uid \(geteuid())), "
                + "and whoever owns it can let any key in; refusing it. Fix it with: chown root \(file) (or chown \(geteuid()))")
        }
    }

    /// Writes the set to `file` atomically (a temporary file, fsync, rename): readers see the
    /// old file or the new one, never half of one. A new file gets mode 0644; an existing one
    /// keeps its mode.
    public func save(file: String) throws {
        var info = stat()
        let mode: mode_t = stat(file, &info) == 0 ? mode_t(info.st_mode) & 0o7777 : 0o644
        try PosixFile.writeAtomically(file, Array(serialized().utf8), mode: mode, replace: true)
    }

    /// Loads `file` (an empty set when it does not exist and `create`), lets `body` change the
    /// set, and saves it when it changed; holds a lock on the folder meanwhile, so concurrent
    /// editors do not lose each other's change.
    public static func edit<T>(file: String, create: Bool = false, _ body: (inout AllowedKeys) throws -> T) throws -> T {
        try PosixFile.withFolderLock(of: file) {
            var keys: AllowedKeys
            if create && !PosixFile.exists(file) {
                keys = AllowedKeys()
            } else {
                keys = try load(file: file)
            }
            let before = keys
            let result = try body(&keys)
            if keys != before { try keys.save(file: file) }
            return result
        }
    }
}
