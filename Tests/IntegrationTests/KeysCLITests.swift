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

    /// A key per worker kind, each allowed only its kind's role (issue 27, defect 6): no key
    /// `init` makes may work both queues.
    @Test func initMakesServerAdminAndAKeyPerWorkerKindAndAllowsEachItsRole() async throws {
        let dir = try Self.folder() + "/suite"
        defer { try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent) }
        let run = try await CLITests.homepwner(["keys", "init", dir, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let server = try CurveKeyPair.load(secretFile: dir + "/server.key_secret")
        let admin = try CurveKeyPair.load(secretFile: dir + "/admin.key_secret")
        let capture = try CurveKeyPair.load(secretFile: dir + "/capture-worker.key_secret")
        let thumbnail = try CurveKeyPair.load(secretFile: dir + "/thumbnail-worker.key_secret")
        #expect(run.stdout.contains("\"capture_worker_public_key\": \"\(capture.publicKey)\""), "\(run.stdout)")
        #expect(run.stdout.contains("\"thumbnail_worker_public_key\": \"\(thumbnail.publicKey)\""), "\(run.stdout)")
        #expect(try AllowedKeys.load(file: dir + "/allowed_keys").entries == [
            AllowedKey(role: .admin, publicKey: admin.publicKey, name: "admin"),
            AllowedKey(role: .captureWorker, publicKey: capture.publicKey, name: "capture-worker"),
            AllowedKey(role: .thumbnailWorker, publicKey: thumbnail.publicKey, name: "thumbnail-worker"),
        ])
        #expect(Set([server.publicKey, admin.publicKey, capture.publicKey, thumbnail.publicKey]).count == 4)
        #expect(!FileManager.default.fileExists(atPath: dir + "/worker.key_secret"))
        // The scrape endpoints' bearer token: 64 hex digits, loadable as the processes load it.
        let token = try BearerToken.load(file: dir + "/metrics.token")
        #expect(token.bytes.count == 64 && token.bytes.allSatisfy { ("0"..."9").contains(Character(UnicodeScalar($0))) || ("a"..."f").contains(Character(UnicodeScalar($0))) })
        #expect(run.stdout.contains("\"metrics_token_file\": \"\(dir)/metrics.token\""), "\(run.stdout)")
        // Without --owner every file is the caller's.
        for name in ["server.key_secret", "admin.key_secret", "capture-worker.key_secret", "thumbnail-worker.key_secret", "metrics.token"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/" + name)
            #expect(attributes[.ownerAccountID] as? Int == Int(geteuid()), "\(name)")
            #expect(attributes[.posixPermissions] as? Int == 0o600, "\(name)")
        }
        let again = try await CLITests.homepwner(["keys", "init", dir])
        #expect(again.status == 6)
        #expect(again.stderr.contains("already exists"))
    }

    /// `--owner` gives the service and worker secrets to a container's user (root only), keeps
    /// the admin key the caller's, and refuses anything but numbers before writing a file.
    @Test func initAndGenGiveTheSecretsAProcessReadsToTheOwnerAsked() async throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bad = try await CLITests.homepwner(["keys", "init", root + "/bad", "--owner", "homepwner"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--owner 'homepwner' is not UID or UID:GID"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root + "/bad"))
        let uid = geteuid() == 0 ? 10001 : Int(geteuid()) + 1
        let run = try await CLITests.homepwner(["keys", "init", root + "/suite", "--owner", "\(uid):\(uid + 1)"])
        if geteuid() != 0 {
            // Only root may give files away: refused up front, nothing written.
            #expect(run.status == 2)
            #expect(run.stderr.contains("only root may give files to another user"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/suite"))
            return
        }
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("(owner \(uid):\(uid + 1))"), "\(run.stdout)")
        for (name, owner) in [
            ("server.key_secret", uid), ("capture-worker.key_secret", uid), ("thumbnail-worker.key_secret", uid),
            ("metrics.token", uid), ("admin.key_secret", 0), ("server.key", 0),
        ] {
            let attributes = try FileManager.default.attributesOfItem(atPath: root + "/suite/" + name)
            #expect(attributes[.ownerAccountID] as? Int == owner, "\(name)")
            #expect(attributes[.groupOwnerAccountID] as? Int == (owner == 0 ? 0 : uid + 1), "\(name)")
        }
        for name in ["capture-worker.key_secret", "thumbnail-worker.key_secret"] {
            #expect(try FileManager.default.attributesOfItem(atPath: root + "/suite/" + name)[.posixPermissions] as? Int == 0o600)
        }
        let gen = try await CLITests.homepwner(["keys", "gen", "thumbs-2", "--dir", root + "/suite", "--owner", "\(uid)"])
        #expect(gen.status == 0, "\(gen.stderr)")
        let secret = try FileManager.default.attributesOfItem(atPath: root + "/suite/thumbs-2.key_secret")
        #expect(secret[.ownerAccountID] as? Int == uid && secret[.groupOwnerAccountID] as? Int == uid)
    }

    /// A secret key file this process may not open says which user it runs as and how to give
    /// it the file (what a container whose keys belong to the host's user sees).
    @Test func anUnreadableSecretSaysWhoToGiveItTo() {
        let message = KeyFileError.io(path: "/run/secrets/server-secret-key", operation: "open", errno: EACCES).description
        #expect(message.contains("this process runs as uid \(geteuid())"), "\(message)")
        #expect(message.contains("--owner \(geteuid())"), "\(message)")
    }
}
