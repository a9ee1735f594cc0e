#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CurveAuth

/// The key files: `NAME.sign.secret` (mode 0600, refused when group or others can access it)
/// and `NAME.sign.pub`, in `SigningKeyFile`'s format, read and written as the CURVE key files
/// are (`KeyFileError`s that name the file; each file written whole or not at all).
extension SigningKeyPair {
    /// The largest key file read: a few hundred bytes in practice.
    static let fileLimit = 4096

    /// The public key file's path for `name`: `DIR/NAME.sign.pub`.
    public static func publicFile(directory: String, name: String) -> String {
        join(directory, name + ".sign.pub")
    }

    /// The secret key file's path for `name`: `DIR/NAME.sign.secret`.
    public static func secretFile(directory: String, name: String) -> String {
        join(directory, name + ".sign.secret")
    }

    /// Writes `NAME.sign.secret` (mode 0600, with `secretOwner` when given; only root may give
    /// a file away) and `NAME.sign.pub` (mode 0644) in `directory`, which must exist. Each file
    /// appears whole or not at all.
    ///
    /// Without `replace`, refuses (`KeyFileError.exists`, writing nothing) when either file
    /// exists. With `replace`, both are replaced; should the public file then fail, the new
    /// secret file stays beside the old public file: run it again.
    ///
    /// - Returns: The two paths.
    @discardableResult
    public func save(
        directory: String, name: String, replace: Bool = false, secretOwner: FileOwner? = nil
    ) throws -> (publicFile: String, secretFile: String) {
        guard CurveKeyPair.isValidName(name) else {
            throw KeyFileError.malformed(path: name, line: 0, reason: "a key name is 1-64 of A-Z a-z 0-9 . _ - (not starting with . or -)")
        }
        let publicPath = Self.publicFile(directory: directory, name: name)
        let secretPath = Self.secretFile(directory: directory, name: name)
        if !replace {
            for path in [publicPath, secretPath] where PosixFile.exists(path) { throw KeyFileError.exists(path: path) }
        }
        let file = SigningKeyFile(name: name, keyPair: self)
        try PosixFile.writeAtomically(secretPath, Array(file.text(includeSecret: true).utf8), mode: 0o600, replace: replace, owner: secretOwner)
        do {
            try PosixFile.writeAtomically(publicPath, Array(file.text(includeSecret: false).utf8), mode: 0o644, replace: replace)
        } catch {
            // Both files or neither: a lone secret file would make the next save refuse.
            if !replace { PosixFile.remove(secretPath) }
            throw error
        }
        return (publicPath, secretPath)
    }

    /// Loads a secret key file (`NAME.sign.secret`) whole: its name and key pair. Refuses one
    /// that group or others can read or write (`KeyFileError.insecureMode`: the file, its mode
    /// and `chmod 600 FILE`), before parsing it.
    public static func loadFile(secretFile path: String) throws -> (name: String, keyPair: SigningKeyPair) {
        let (bytes, info) = try PosixFile.read(path, limit: fileLimit)
        let mode = UInt32(info.st_mode) & 0o7777
        guard mode & 0o077 == 0 else { throw KeyFileError.insecureMode(path: path, mode: mode) }
        let file = try SigningKeyFile(parsing: String(decoding: bytes, as: UTF8.self), path: path)
        guard let keyPair = file.keyPair else {
            throw KeyFileError.malformed(path: path, line: 0, reason: "no secret-key: this is a public key file (use NAME.sign.secret)")
        }
        return (file.name, keyPair)
    }

    /// The key pair of a secret key file (`loadFile(secretFile:)`).
    public static func load(secretFile path: String) throws -> SigningKeyPair {
        try loadFile(secretFile: path).keyPair
    }

    private static func join(_ directory: String, _ file: String) -> String {
        directory.isEmpty ? file : (directory.hasSuffix("/") ? directory + file : directory + "/" + file)
    }
}

extension SigningPublicKey {
    /// Loads a key file's public key and name: `NAME.sign.pub`, or a secret file
    /// (`NAME.sign.secret`), whose mode is then checked as `SigningKeyPair.load(secretFile:)` does.
    public static func loadFile(_ path: String) throws -> (name: String, publicKey: SigningPublicKey) {
        let (bytes, info) = try PosixFile.read(path, limit: SigningKeyPair.fileLimit)
        let file = try SigningKeyFile(parsing: String(decoding: bytes, as: UTF8.self), path: path)
        let mode = UInt32(info.st_mode) & 0o7777
        if file.keyPair != nil, mode & 0o077 != 0 { throw KeyFileError.insecureMode(path: path, mode: mode) }
        return (file.name, file.publicKey)
    }

    /// The public key of a key file (`loadFile(_:)`).
    public static func load(file path: String) throws -> SigningPublicKey {
        try loadFile(path).publicKey
    }
}
