import CurveAuth
import Foundation
import Testing
import ZMQ

@Suite struct AllowedKeysTests {
    static let a = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    static let b = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
    static let c = "#zGd9<bL&ZB{cgNh%R?0R6Bf]j+=^U8^]4(ksK!["

    @Test func parsesRolesKeysNamesCommentsAndBlankLines() throws {
        let text = """
            # who may call the suite

            admin  \(Self.a)  ops-laptop
            \tworker \(Self.b)   # a comment after the key
            reader \(Self.c) dashboard # and after a name
            """
        let keys = try AllowedKeys(parsing: text, file: "allowed")
        #expect(keys.entries == [
            AllowedKey(role: .admin, publicKey: Self.a, name: "ops-laptop"),
            AllowedKey(role: .worker, publicKey: Self.b, name: nil),
            AllowedKey(role: .reader, publicKey: Self.c, name: "dashboard"),
        ])
        #expect(keys.entry(forKey: Self.b)?.role == .worker)
        #expect(keys.entry(forKey: "nope") == nil)
    }

    @Test(arguments: [
        ("admin \(a)\nwriter \(b)\n", 2, "unknown role 'writer'"),
        ("# c\n\nworker\n", 3, "'worker' needs a Z85 public key"),
        ("reader tooshort\n", 1, "'tooshort' is not a Z85 CURVE public key"),
        ("reader \(a) one two\n", 1, "unexpected 'two' after the name 'one'"),
        ("admin \(a) x\nworker \(a) y\n", 2, "already listed on line 1"),
        ("admin \(a) x\nworker \(b) x\n", 2, "the name 'x' is already used on line 1"),
        ("admin \(a) -bad\n", 1, "'-bad' is not a valid name"),
    ])
    func aBadLineIsAnErrorNamingTheFileTheLineAndTheProblem(text: String, line: Int, reason: String) throws {
        do {
            _ = try AllowedKeys(parsing: text, file: "/etc/homepwner/allowed_keys")
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.line == line)
            #expect(error.reason.contains(reason), "\(error)")
            #expect("\(error)".hasPrefix("/etc/homepwner/allowed_keys:\(line): "))
        }
    }

    @Test func editsKeepCommentsAndOrderAndRoundTrip() throws {
        let text = "# header\nadmin  \(Self.a) ops\n\n# workers\nworker \(Self.b) w1\n"
        var keys = try AllowedKeys(parsing: text, file: "f")
        #expect(keys.serialized() == text)
        #expect(try keys.allow(AllowedKey(role: .reader, publicKey: Self.c, name: "dash")) == .added)
        #expect(try keys.allow(AllowedKey(role: .reader, publicKey: Self.c)) == .unchanged)
        #expect(try keys.allow(AllowedKey(role: .reader, publicKey: Self.b)) == .changed(from: AllowedKey(role: .worker, publicKey: Self.b, name: "w1")))
        #expect(keys.revoke("ops") == [AllowedKey(role: .admin, publicKey: Self.a, name: "ops")])
        #expect(keys.revoke(Self.c).count == 1)
        #expect(keys.revoke("nobody").isEmpty)
        #expect(keys.serialized() == "# header\n\n# workers\nreader \(Self.b) w1\n")
        #expect(try AllowedKeys(parsing: keys.serialized(), file: "f") == keys)
        // A name another key holds is refused.
        #expect(throws: AllowedKeysError.self) { try keys.allow(AllowedKey(role: .admin, publicKey: Self.a, name: "w1")) }
    }

    @Test func everyRoleIsWrittenWholeAndReadsBack() throws {
        // Roles were padded to six columns by truncating: "capture-worker" was saved as "captur".
        for role in Role.allCases {
            var keys = AllowedKeys()
            _ = try keys.allow(AllowedKey(role: role, publicKey: Self.a, name: "k"))
            #expect(try AllowedKeys(parsing: keys.serialized(), file: "f").entries == [AllowedKey(role: role, publicKey: Self.a, name: "k")])
        }
    }

    @Test func editReplacesTheFileAtomicallyKeepingItsMode() throws {
        let folder = try TemporaryFolder()
        let file = try folder.write("allowed_keys", "admin \(Self.a) ops\n", mode: 0o640)
        let inodeBefore = try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int
        try AllowedKeys.edit(file: file) { keys in try keys.allow(AllowedKey(role: .worker, publicKey: Self.b, name: "w1")) }
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect(attributes[.posixPermissions] as? Int == 0o640)
        // Replaced by a rename (a new inode), not rewritten in place.
        #expect(attributes[.systemFileNumber] as? Int != inodeBefore)
        #expect(try AllowedKeys.load(file: file).entries.map(\.name) == ["ops", "w1"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["allowed_keys"])
        // A new file can be created; a missing one is an error otherwise.
        let fresh = folder.file("new_keys")
        #expect(throws: KeyFileError.self) { try AllowedKeys.edit(file: fresh) { _ in } }
        try AllowedKeys.edit(file: fresh, create: true) { keys in try keys.allow(AllowedKey(role: .reader, publicKey: Self.c)) }
        #expect(try AllowedKeys.load(file: fresh).entries.count == 1)
    }

    /// A line ending in a carriage return besides its CRLF (a file that went through two
    /// conversions; found by ops/fuzz allowed-keys) lost one CR at each save: the edit `homepwner
    /// keys allow` makes changed a comment it should keep, and the next load read another set.
    @Test func aSaveWritesWhatTheLoadReadEvenWithStrayCarriageReturns() throws {
        let folder = try TemporaryFolder()
        let file = try folder.write("allowed_keys", "# who may call\r\r\nadmin \(Self.a) ops\r\n#\r")
        let loaded = try AllowedKeys.load(file: file)
        #expect(loaded.entries == [AllowedKey(role: .admin, publicKey: Self.a, name: "ops")])
        try loaded.save(file: file)
        #expect(try AllowedKeys.load(file: file) == loaded)
    }
}
