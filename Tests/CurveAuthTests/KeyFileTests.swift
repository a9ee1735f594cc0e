import CurveAuth
import Foundation
import Testing
import ZMQ

@Suite struct KeyFileTests {
    @Test func savedKeyPairLoadsBackAndTheSecretFileIsMode0600() throws {
        let folder = try TemporaryFolder()
        let keys = try CurveKeyPair.generate()
        let (publicFile, secretFile) = try keys.save(directory: folder.path, name: "item-service")
        #expect(publicFile == folder.file("item-service.key"))
        #expect(secretFile == folder.file("item-service.key_secret"))
        #expect(try CurveKeyPair.load(secretFile: secretFile) == keys)
        #expect(try CurveKeyPair.loadPublicKey(file: publicFile) == keys.publicKey)
        let secretMode = try FileManager.default.attributesOfItem(atPath: secretFile)[.posixPermissions] as? Int
        #expect(secretMode == 0o600)
        // The public file holds no secret.
        let publicText = try String(contentsOfFile: publicFile, encoding: .utf8)
        #expect(publicText.contains("public-key = \"\(keys.publicKey)\""))
        #expect(!publicText.contains("secret-key"))
        #expect(!publicText.contains(keys.secretKey))
    }

    @Test func savingRefusesToOverwriteAndLeavesTheOldFilesAlone() throws {
        let folder = try TemporaryFolder()
        let first = try CurveKeyPair.generate()
        try first.save(directory: folder.path, name: "svc")
        do {
            try CurveKeyPair.generate().save(directory: folder.path, name: "svc")
            Issue.record("a second save overwrote the key files")
        } catch {
            #expect((error as? KeyFileError) == .exists(path: folder.file("svc.key")))
        }
        #expect(try CurveKeyPair.load(secretFile: folder.file("svc.key_secret")) == first)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["svc.key", "svc.key_secret"])
    }

    @Test func groupOrWorldReadableSecretFileIsRefusedNamingTheFileItsModeAndTheFix() throws {
        let folder = try TemporaryFolder()
        let keys = try CurveKeyPair.generate()
        let (_, secretFile) = try keys.save(directory: folder.path, name: "loose")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secretFile)
        do {
            _ = try CurveKeyPair.load(secretFile: secretFile)
            Issue.record("a 0644 secret file was loaded")
        } catch {
            let text = "\(error)"
            #expect((error as? KeyFileError) == .insecureMode(path: secretFile, mode: 0o644))
            #expect(text.contains(secretFile))
            #expect(text.contains("0644"))
            #expect(text.contains("chmod 600 \(secretFile)"))
        }
        // Reading only its public key from it is refused the same way.
        #expect(throws: KeyFileError.insecureMode(path: secretFile, mode: 0o644)) { try CurveKeyPair.loadPublicKey(file: secretFile) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretFile)
        #expect(try CurveKeyPair.load(secretFile: secretFile) == keys)
    }

    /// What `zmq.auth.create_certificates` writes, byte for byte in layout (pyzmq 25).
    @Test func certificateFilesWrittenByPyzmqLoad() throws {
        let folder = try TemporaryFolder()
        let keys = try CurveKeyPair.generate()
        let banner = "#   ****  Generated on 2026-12-02 17:20:01.123456 by pyzmq  ****\n"
        try folder.write("client.key", banner + """
            #   ZeroMQ CURVE Public Certificate
            #   Exchange securely, or use a secure mechanism to verify the contents
            #   of this file after exchange. Store public certificates in your home
            #   directory, in the .curve subdirectory.

            metadata
            curve
                public-key = "\(keys.publicKey)"

            """)
        try folder.write("client.key_secret", banner + """
            #   ZeroMQ CURVE **Secret** Certificate
            #   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.

            metadata
            curve
                public-key = "\(keys.publicKey)"
                secret-key = "\(keys.secretKey)"

            """, mode: 0o600)
        #expect(try CurveKeyPair.loadPublicKey(file: folder.file("client.key")) == keys.publicKey)
        #expect(try CurveKeyPair.load(secretFile: folder.file("client.key_secret")) == keys)
    }

    /// The same files saved with CRLF line ends (pyzmq on Windows writes text files so) were
    /// one line, a comment: "no public-key".
    @Test func certificateFilesWithCRLFLineEndsLoad() throws {
        let folder = try TemporaryFolder()
        let keys = try CurveKeyPair.generate()
        let (publicFile, secretFile) = try keys.save(directory: folder.path, name: "svc")
        for file in [publicFile, secretFile] {
            let text = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "\n", with: "\r\n")
            try text.write(toFile: file, atomically: false, encoding: .utf8)
        }
        #expect(try CurveKeyPair.loadPublicKey(file: publicFile) == keys.publicKey)
        #expect(try CurveKeyPair.load(secretFile: secretFile) == keys)
    }

    /// pyzmq's `load_certificate` reads each stripped line starting with `public-key` /
    /// `secret-key` and strips quotes from what follows `=`: our files must read that way.
    @Test func ourFilesReadTheWayPyzmqLoadCertificateReadsThem() throws {
        let folder = try TemporaryFolder()
        let keys = try CurveKeyPair.generate()
        let (_, secretFile) = try keys.save(directory: folder.path, name: "svc")
        var found: [String: String] = [:]
        for line in try String(contentsOfFile: secretFile, encoding: .utf8).split(separator: "\n") {
            let stripped = line.trimmingCharacters(in: .whitespaces)
            if stripped.hasPrefix("#") { continue }
            for name in ["public-key", "secret-key"] where stripped.hasPrefix(name) {
                let value = stripped.split(separator: "=", maxSplits: 1)[1]
                found[name] = value.trimmingCharacters(in: CharacterSet(charactersIn: " \t'\""))
            }
        }
        #expect(found["public-key"] == keys.publicKey)
        #expect(found["secret-key"] == keys.secretKey)
    }

    @Test func aSecretKeyThatDoesNotBelongToThePublicKeyIsRefused() throws {
        let folder = try TemporaryFolder()
        let a = try CurveKeyPair.generate()
        let b = try CurveKeyPair.generate()
        let path = try folder.write("mixed.key_secret", """
            curve
                public-key = "\(a.publicKey)"
                secret-key = "\(b.secretKey)"

            """, mode: 0o600)
        do {
            _ = try CurveKeyPair.load(secretFile: path)
            Issue.record("a mismatched pair loaded")
        } catch {
            #expect("\(error)".contains("does not belong"))
            #expect(!"\(error)".contains(b.secretKey))
        }
    }

    @Test func aFileWithoutAPublicKeyOrWithABadOneNamesTheProblem() throws {
        let folder = try TemporaryFolder()
        let empty = try folder.write("empty.key", "# nothing\nmetadata\n")
        #expect(throws: KeyFileError.malformed(path: empty, line: 0, reason: "no public-key in a 'curve' section: not a CURVE certificate")) {
            try CurveKeyPair.loadPublicKey(file: empty)
        }
        let bad = try folder.write("bad.key", "curve\n    public-key = \"tooshort\"\n")
        #expect(throws: KeyFileError.malformed(path: bad, line: 2, reason: "public-key is not a 40-character Z85 key")) {
            try CurveKeyPair.loadPublicKey(file: bad)
        }
    }
}
