import CurveAuth
import Foundation
import Testing

@testable import Signing

/// A fresh folder under the system temp directory, removed on deinit.
final class TemporaryFolder: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("signing-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` inside the folder.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` with `mode`; returns the path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    /// The permission bits of `name`.
    func mode(_ name: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: file(name))[.posixPermissions] as? Int
    }
}

/// `NAME.sign.pub` and `NAME.sign.secret` on disk: round trips, modes, and every refusal naming
/// the file (and the line) without quoting the secret.
@Suite struct SigningKeyFileTests {
    /// The error `body` throws, as the `KeyFileError` it must be.
    func refusal(_ body: () throws -> Void) -> KeyFileError? {
        do {
            try body()
            Issue.record("no error was thrown")
            return nil
        } catch {
            #expect(error is KeyFileError, "\(error)")
            return error as? KeyFileError
        }
    }

    @Test func savedKeyFilesLoadBackWithTheSecretOneMode0600() throws {
        let folder = try TemporaryFolder()
        let keys = SigningKeyPair.generate()
        let (publicFile, secretFile) = try keys.save(directory: folder.path, name: "backup")
        #expect(publicFile == folder.file("backup.sign.pub"))
        #expect(secretFile == folder.file("backup.sign.secret"))
        #expect(try folder.mode("backup.sign.secret") == 0o600)
        #expect(try folder.mode("backup.sign.pub") == 0o644)
        #expect(try SigningKeyPair.load(secretFile: secretFile) == keys)
        #expect(try SigningKeyPair.loadFile(secretFile: secretFile).name == "backup")
        #expect(try SigningPublicKey.load(file: publicFile) == keys.publicKey)
        #expect(try SigningPublicKey.loadFile(publicFile).name == "backup")
        // The secret file gives its public key too.
        #expect(try SigningPublicKey.load(file: secretFile) == keys.publicKey)
        // A signature made with the loaded secret verifies with the loaded public key.
        let message = Array("manifest".utf8)
        let signature = try SigningKeyPair.load(secretFile: secretFile).sign(message)
        #expect(try SigningPublicKey.load(file: publicFile).verify(signature: signature, message: message))

        let publicText = try String(contentsOfFile: publicFile, encoding: .utf8)
        let secretText = try String(contentsOfFile: secretFile, encoding: .utf8)
        for text in [publicText, secretText] {
            #expect(text.hasPrefix("# homepwner signing key (Ed25519)\n"))
            #expect(text.contains("\nname = backup\n"))
            #expect(text.contains("\npublic-key = \(keys.publicKey.base64)\n"))
            #expect(text.contains(keys.fingerprint))
        }
        #expect(secretText.contains("\nsecret-key = \(Sodium.base64(keys.secretKey))\n"))
        #expect(!publicText.contains("secret-key"))
        #expect(!publicText.contains(Sodium.base64(keys.seed).prefix(40)))
    }

    @Test func savingRefusesToOverwriteUnlessAskedToReplace() throws {
        let folder = try TemporaryFolder()
        let first = SigningKeyPair.generate()
        try first.save(directory: folder.path, name: "backup")
        let error = refusal { try SigningKeyPair.generate().save(directory: folder.path, name: "backup") }
        #expect(error == .exists(path: folder.file("backup.sign.pub")))
        #expect(try SigningKeyPair.load(secretFile: folder.file("backup.sign.secret")) == first)
        // A lone secret file is refused too, and nothing is written beside it.
        try FileManager.default.removeItem(atPath: folder.file("backup.sign.pub"))
        #expect(refusal { try SigningKeyPair.generate().save(directory: folder.path, name: "backup") } == .exists(path: folder.file("backup.sign.secret")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["backup.sign.secret"])

        let second = SigningKeyPair.generate()
        try second.save(directory: folder.path, name: "backup", replace: true)
        #expect(try SigningKeyPair.load(secretFile: folder.file("backup.sign.secret")) == second)
        #expect(try SigningPublicKey.load(file: folder.file("backup.sign.pub")) == second.publicKey)
        #expect(try folder.mode("backup.sign.secret") == 0o600)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["backup.sign.pub", "backup.sign.secret"])
        #expect(refusal { try second.save(directory: folder.path, name: "../backup") } != nil)
    }

    @Test func aGroupOrWorldReadableSecretFileIsRefusedNamingTheFileItsModeAndTheFix() throws {
        let folder = try TemporaryFolder()
        let keys = SigningKeyPair.generate()
        let (_, secretFile) = try keys.save(directory: folder.path, name: "loose")
        for mode in [0o644, 0o640, 0o604, 0o660] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: secretFile)
            let error = refusal { _ = try SigningKeyPair.load(secretFile: secretFile) }
            #expect(error == .insecureMode(path: secretFile, mode: UInt32(mode)))
            let expected = "\(secretFile) has mode 0\(String(mode, radix: 8)): group or others can access this secret; "
                + "refusing to use it. Fix it with: chmod 600 \(secretFile)"
            #expect(error?.description == expected)
            // Reading only its public key from it is refused the same way.
            #expect(refusal { _ = try SigningPublicKey.load(file: secretFile) } == .insecureMode(path: secretFile, mode: UInt32(mode)))
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretFile)
        #expect(try SigningKeyPair.load(secretFile: secretFile) == keys)
        // A public file may be world-readable; it is not a secret.
        #expect(try SigningPublicKey.load(file: folder.file("loose.sign.pub")) == keys.publicKey)
    }

    @Test func aPublicFileIsNotASecretFile() throws {
        let folder = try TemporaryFolder()
        let (publicFile, _) = try SigningKeyPair.generate().save(directory: folder.path, name: "backup")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: publicFile)
        let error = refusal { _ = try SigningKeyPair.load(secretFile: publicFile) }
        #expect(error?.description == "\(publicFile): no secret-key: this is a public key file (use NAME.sign.secret)")
    }

    /// Each broken file is refused with its path, the line to blame and what is wrong; none of
    /// the messages quote the secret.
    @Test func malformedFilesAreRefusedNamingTheFileAndTheLine() throws {
        let folder = try TemporaryFolder()
        let keys = SigningKeyPair.generate()
        let other = SigningKeyPair.generate()
        let header = SigningKeyFile.header
        let publicKey = keys.publicKey.base64
        let secretKey = Sodium.base64(keys.secretKey)
        let cases: [(name: String, text: String, expected: String)] = [
            ("empty", "", ":1: the first line is not '\(header)'"),
            ("curve", "#   ZeroMQ CURVE Public Certificate\nmetadata\ncurve\n", ":1: the first line is not '\(header)'"),
            ("late-header", "\n\(header)\nname = a\npublic-key = \(publicKey)\n", ":1: the first line is not '\(header)'"),
            ("other-header", "# homepwner signing key (Ed448)\nname = a\npublic-key = \(publicKey)\n", ":1: the first line is not"),
            ("short", "\(header)\nname = a\npublic-key = \(Sodium.base64(Array(keys.publicKey.bytes.dropLast())))\n",
             ":3: public-key is 31 bytes; an Ed25519 public key is 32 (44 base64 characters)"),
            ("long-secret", "\(header)\nname = a\npublic-key = \(publicKey)\nsecret-key = \(Sodium.base64(keys.secretKey + [0]))\n",
             ":4: secret-key is 65 bytes; an Ed25519 secret key is 64 (88 base64 characters)"),
            ("bad-base64", "\(header)\nname = a\npublic-key = \(publicKey.dropLast(2))!!\n", ":3: public-key is not base64"),
            ("unpadded", "\(header)\nname = a\n\npublic-key = \(publicKey.dropLast())\n", ":4: public-key is not base64"),
            ("url-safe", "\(header)\nname = a\nsecret-key = -\(secretKey.dropFirst())\npublic-key = \(publicKey)\n", ":3: secret-key is not base64"),
            ("secret-no-equals", "\(header)\nname = a\nsecret-key \(secretKey)\n", ":3: expected 'property = value'"),
            ("no-equals", "\(header)\nname = a\npublic-key \(publicKey)\n", ":3: expected 'property = value'"),
            ("unknown", "\(header)\nname = a\npublic_key = \(publicKey)\n", ":3: unknown property 'public_key'"),
            ("twice", "\(header)\nname = a\npublic-key = \(publicKey)\npublic-key = \(publicKey)\n", ":4: a second 'public-key' line"),
            ("bad-name", "\(header)\nname = -a b\npublic-key = \(publicKey)\n", ":2: name '-a b' is not 1-64 of"),
            ("no-name", "\(header)\npublic-key = \(publicKey)\n", ": no 'name = NAME' line"),
            ("no-public", "\(header)\nname = a\nsecret-key = \(secretKey)\n", ": no 'public-key = BASE64' line"),
            ("mixed", "\(header)\nname = a\npublic-key = \(other.publicKey.base64)\nsecret-key = \(secretKey)\n",
             ":4: secret-key does not belong to public-key on line 3"),
            ("spliced", "\(header)\nname = a\npublic-key = \(other.publicKey.base64)\nsecret-key = \(Sodium.base64(keys.seed + other.publicKey.bytes))\n",
             ":4: secret-key is not an Ed25519 secret key"),
        ]
        for (name, text, expected) in cases {
            let path = try folder.write(name + ".sign.secret", text)
            let error = refusal { _ = try SigningKeyPair.load(secretFile: path) }
            let message = error?.description ?? ""
            #expect(message.hasPrefix(path + expected), "\(name): \(message)")
            #expect(!message.contains(secretKey) && !message.contains(secretKey.prefix(20)), "\(name) quoted the secret")
            // Loading the public key reads the same way.
            #expect(refusal { _ = try SigningPublicKey.load(file: path) }?.description.hasPrefix(path + expected) == true, "\(name)")
        }
    }

    @Test func theParserAcceptsCommentsBlankLinesCRLFAndSpacing() throws {
        let keys = SigningKeyPair.generate()
        let text = "\(SigningKeyFile.header)\r\n# a comment\r\n\r\n  name=backup-2  \r\n\tpublic-key =   \(keys.publicKey.base64)\r\n"
            + "  # secret below\r\nsecret-key = \(Sodium.base64(keys.secretKey))"
        let file = try SigningKeyFile(parsing: text, path: "k")
        #expect(file.name == "backup-2")
        #expect(file.keyPair == keys)
        #expect(file.publicKey == keys.publicKey)
        // What it writes, it reads back.
        let written = SigningKeyFile(name: "backup-2", keyPair: keys)
        #expect(try SigningKeyFile(parsing: written.text(includeSecret: true), path: "k") == written)
        #expect(try SigningKeyFile(parsing: written.text(includeSecret: false), path: "k") == SigningKeyFile(name: "backup-2", publicKey: keys.publicKey))
    }

    @Test func aMissingFileOrAFolderIsRefusedNamingIt() throws {
        let folder = try TemporaryFolder()
        let missing = folder.file("nope.sign.secret")
        #expect(refusal { _ = try SigningKeyPair.load(secretFile: missing) }?.description.hasPrefix("\(missing): open failed") == true)
        #expect(refusal { _ = try SigningPublicKey.load(file: folder.path) }?.description == "\(folder.path): not a regular file")
    }
}
