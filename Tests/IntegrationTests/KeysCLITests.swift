import CurveAuth
import Foundation
import Testing

/// `homepwner keys …` as a user runs it: files on disk, exit codes, `--json`.
@Suite struct KeysCLITests {
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keys-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func genWritesBothFilesWithTheSecretOne0600AndRefusesToOverwrite() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let run = try await CLITests.homepwner(["keys", "gen", "item-service", "--dir", dir])
        #expect(run.status == 0, "\(run.stderr)")
        let secret = dir + "/item-service.key_secret"
        let mode = try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let keys = try CurveKeyPair.load(secretFile: secret)
        #expect(try CurveKeyPair.loadPublicKey(file: dir + "/item-service.key") == keys.publicKey)
        #expect(run.stdout.contains("public key: \(keys.publicKey)"))

        let again = try await CLITests.homepwner(["keys", "gen", "item-service", "--dir", dir])
        #expect(again.status == 6)
        #expect(again.stderr.contains("already exists"))
        #expect(try CurveKeyPair.load(secretFile: secret) == keys)

        let help = try await CLITests.homepwner(["keys", "gen", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--dir"))
    }

    @Test func allowLsAndRevokeEditTheAllowedKeysFile() async throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let allowed = dir + "/allowed_keys"
        _ = try await CLITests.homepwner(["keys", "gen", "worker-1", "--dir", dir])
        let workerKey = try CurveKeyPair.loadPublicKey(file: dir + "/worker-1.key")
        let other = try CurveKeyPair.generate().publicKey

        let missing = try await CLITests.homepwner(["keys", "allow", "worker", dir + "/worker-1.key", "--file", allowed])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains(allowed))
        let byFile = try await CLITests.homepwner(["keys", "allow", "worker", dir + "/worker-1.key", "--file", allowed, "--create"])
        #expect(byFile.status == 0, "\(byFile.stderr)")
        let byKey = try await CLITests.homepwner(["keys", "allow", "admin", other, "--name", "ops", "--file", allowed])
        #expect(byKey.status == 0, "\(byKey.stderr)")
        let badRole = try await CLITests.homepwner(["keys", "allow", "root", other, "--file", allowed])
        #expect(badRole.status == 2)

        let ls = try await CLITests.homepwner(["keys", "ls", "--file", allowed, "--json"])
        #expect(ls.status == 0)
        #expect(ls.stdout.contains("{\"role\": \"worker\", \"public_key\": \"\(workerKey)\", \"name\": \"worker-1\"}"))
        #expect(ls.stdout.contains("{\"role\": \"admin\", \"public_key\": \"\(other)\", \"name\": \"ops\"}"))

        let revoke = try await CLITests.homepwner(["keys", "revoke", "ops", "--file", allowed])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(try AllowedKeys.load(file: allowed).entries == [AllowedKey(role: .worker, publicKey: workerKey, name: "worker-1")])
        let again = try await CLITests.homepwner(["keys", "revoke", "ops", "--file", allowed])
        #expect(again.status == 4)

        // A bad line: the error names the file and the line, and nothing is changed.
        try Data("worker \(workerKey) worker-1\nwriter \(other)\n".utf8).write(to: URL(fileURLWithPath: allowed))
        let bad = try await CLITests.homepwner(["keys", "ls", "--file", allowed])
        #expect(bad.status == 3)
        #expect(bad.stderr.contains("\(allowed):2: unknown role 'writer'"))
    }
}
