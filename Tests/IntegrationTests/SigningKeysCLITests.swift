import CurveAuth
import Foundation
import Signing
import Testing

/// `homepwner keys sign-gen` through the real executable: the files it writes load and sign,
/// it never overwrites without --force, and its help and JSON say what it did.
@Suite struct SigningKeysCLITests {
    @Test func signGenWritesAKeyPairThatSignsAndRefusesToOverwriteWithoutForce() async throws {
        let dir = try KeysCLITests.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let run = try await CLITests.homepwner(["keys", "sign-gen", "backup", "--dir", dir])
        #expect(run.status == 0, "\(run.stderr)")
        let secretFile = dir + "/backup.sign.secret", publicFile = dir + "/backup.sign.pub"
        #expect(try FileManager.default.attributesOfItem(atPath: secretFile)[.posixPermissions] as? Int == 0o600)
        let keys = try SigningKeyPair.load(secretFile: secretFile)
        let publicKey = try SigningPublicKey.load(file: publicFile)
        #expect(publicKey == keys.publicKey)
        #expect(run.stdout == "wrote \(secretFile) (secret, mode 0600) and \(publicFile) (public)\nfingerprint: \(keys.fingerprint)\n")
        let message = Array("manifest".utf8)
        #expect(SigningKeyPair.verify(signature: keys.sign(message), message: message, publicKey: publicKey))

        // Never overwritten without --force: exit 6, the file named, the key unchanged.
        let again = try await CLITests.homepwner(["keys", "sign-gen", "backup", "--dir", dir])
        #expect(again.status == 6)
        #expect(again.stderr.contains("homepwner keys sign-gen: \(publicFile) already exists; refusing to overwrite it"), "\(again.stderr)")
        #expect(again.stderr.contains("or pass --force to replace the key pair"), "\(again.stderr)")
        #expect(try SigningKeyPair.load(secretFile: secretFile) == keys)

        // --force replaces both; --json says what was written.
        let forced = try await CLITests.homepwner(["keys", "sign-gen", "backup", "--dir", dir, "--force", "--json"])
        #expect(forced.status == 0, "\(forced.stderr)")
        let replaced = try SigningKeyPair.load(secretFile: secretFile)
        #expect(replaced != keys)
        #expect(try SigningPublicKey.load(file: publicFile) == replaced.publicKey)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(forced.stdout.utf8)) as? [String: String])
        #expect(json == [
            "name": "backup", "fingerprint": replaced.fingerprint, "public_key": replaced.publicKey.base64,
            "public_file": publicFile, "secret_file": secretFile,
        ])

        // A loosened secret file is refused by the key's readers with the fix to run.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secretFile)
        #expect(throws: KeyFileError.insecureMode(path: secretFile, mode: 0o644)) { try SigningKeyPair.load(secretFile: secretFile) }
    }

    @Test func signGenHelpUsageAndTheKeysOverviewDescribeIt() async throws {
        let help = try await CLITests.homepwner(["keys", "sign-gen", "--help"])
        #expect(help.status == 0)
        for text in ["Ed25519", "NAME.sign.pub", "NAME.sign.secret", "--dir", "--force", "--json", "backup manifests"] {
            #expect(help.stdout.contains(text), "\(text) in \(help.stdout)")
        }
        let overview = try await CLITests.homepwner(["keys", "--help"])
        #expect(overview.stdout.contains("homepwner keys sign-gen NAME"), "\(overview.stdout)")

        let noName = try await CLITests.homepwner(["keys", "sign-gen"])
        #expect(noName.status == 2)
        #expect(noName.stderr.contains("expected one NAME"), "\(noName.stderr)")
        let badName = try await CLITests.homepwner(["keys", "sign-gen", "../backup"])
        #expect(badName.status == 2)
        #expect(badName.stderr.contains("'../backup' is not a valid name"), "\(badName.stderr)")
        let typo = try await CLITests.homepwner(["keys", "sign-gne"])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("did you mean 'sign-gen'?"), "\(typo.stderr)")

        let dir = try KeysCLITests.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let missing = try await CLITests.homepwner(["keys", "sign-gen", "backup", "--dir", dir + "/absent"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains(dir + "/absent"), "\(missing.stderr)")
    }
}
