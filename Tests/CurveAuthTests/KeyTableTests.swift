import CurveAuth
import Foundation
import Runtime
import Testing
import TestSupport
import ZMQ

@Suite struct KeyTableTests {
    static let a = AllowedKeysTests.a
    static let b = AllowedKeysTests.b

    @Test func explicitReloadPicksUpARevokedKey() throws {
        let folder = try TemporaryFolder()
        let (logger, _) = collectingLogger()
        let file = try folder.write("allowed_keys", "admin \(Self.a) ops\nworker \(Self.b) w1\n")
        let table = try KeyTable(file: file, logger: logger)
        #expect(table.role(ofUserID: Self.a) == .admin)
        #expect(table.entry(ofUserID: Self.b)?.name == "w1")
        try AllowedKeys.edit(file: file) { _ = $0.revoke(Self.a) }
        #expect(table.role(ofUserID: Self.a) == .admin)  // not until a reload
        #expect(table.reload())
        #expect(table.role(ofUserID: Self.a) == nil)
        #expect(table.role(ofUserID: Self.b) == .worker)
        #expect(table.generation == 2)
    }

    /// A file saved on Windows (or by an editor set to CRLF) read "\r\n" as no line end at all:
    /// with a comment first, the whole file was one comment and every key was refused.
    @Test func aFileSavedWithCRLFLineEndsGivesEachKeyItsRole() throws {
        let folder = try TemporaryFolder()
        let (logger, _) = collectingLogger()
        let file = try folder.write("allowed_keys", "# who may call\r\nadmin \(Self.a) ops\r\nworker \(Self.b) w1\r\n")
        let table = try KeyTable(file: file, logger: logger)
        #expect(table.role(ofUserID: Self.a) == .admin)
        #expect(table.role(ofUserID: Self.b) == .worker)
        #expect(table.entry(ofUserID: Self.b)?.name == "w1")
    }

    @Test func aReloadThatFailsKeepsThePreviousTableAndLogsWhyOnce() throws {
        let folder = try TemporaryFolder()
        let (logger, logs) = collectingLogger()
        let file = try folder.write("allowed_keys", "admin \(Self.a) ops\n")
        let table = try KeyTable(file: file, logger: logger)
        try folder.write("allowed_keys", "admin \(Self.a) ops\nwriter \(Self.b)\n")
        #expect(!table.reloadIfChanged())
        #expect(table.role(ofUserID: Self.a) == .admin)
        #expect(table.count == 1)
        let errors = logs.lines.filter { $0.contains("not reloaded") }
        #expect(errors.count == 1)
        #expect(errors.first?.contains("allowed_keys:2: unknown role 'writer'") == true)
        // The same bad version is not reported again every check.
        #expect(!table.reloadIfChanged())
        #expect(logs.lines.filter { $0.contains("not reloaded") }.count == 1)
        // Fixed: the next check loads it.
        try AllowedKeys(parsing: "reader \(Self.b)\n", file: "x").save(file: file)
        #expect(table.reloadIfChanged())
        #expect(table.role(ofUserID: Self.a) == nil)
        #expect(table.role(ofUserID: Self.b) == .reader)
    }

    @Test func aFileOthersMayWriteOrAnotherUserOwnsIsRefusedAtStartAndOnReload() throws {
        let folder = try TemporaryFolder()
        let (logger, logs) = collectingLogger()
        for mode in [0o664, 0o646, 0o666] {
            let file = try folder.write("open-\(mode)", "admin \(Self.a)\n", mode: mode)
            do {
                _ = try KeyTable(file: file, logger: logger)
                Issue.record("mode \(String(mode, radix: 8)) was accepted")
            } catch {
                #expect("\(error)".contains("chmod go-w \(file)"), "\(error)")
            }
        }
        // Readable by all is fine (it holds public keys only); writable only by its owner.
        let file = try folder.write("allowed_keys", "admin \(Self.a)\n", mode: 0o644)
        let table = try KeyTable(file: file, logger: logger)
        // Made writable by the group: the edit is not taken, the old keys stay, and it shows.
        try folder.write("allowed_keys", "admin \(Self.a)\nadmin \(Self.b)\n", mode: 0o664)
        #expect(!table.reloadIfChanged())
        #expect(table.role(ofUserID: Self.b) == nil)
        #expect(table.problem?.message.contains("group or others may write it") == true)
        #expect(logs.lines.contains { $0.contains("not reloaded") && $0.contains("chmod go-w") })
    }

    @Test(.enabled(if: geteuid() == 0, "giving a file to another user needs root"))
    func aFileAnotherUserOwnsIsRefused() throws {
        let folder = try TemporaryFolder()
        let (logger, _) = collectingLogger()
        let other = try folder.write("other", "admin \(Self.a)\n", mode: 0o644)
        #expect(chown(other, 12345, 12345) == 0)
        do {
            _ = try KeyTable(file: other, logger: logger)
            Issue.record("a file of uid 12345 was accepted")
        } catch {
            #expect("\(error)".contains("belongs to uid 12345"), "\(error)")
        }
    }

    @Test func aProblemIsLoggedAgainUntilFixedAndClearedByTheFix() throws {
        let folder = try TemporaryFolder()
        let (logger, logs) = collectingLogger()
        let file = try folder.write("allowed_keys", "admin \(Self.a)\n")
        let table = try KeyTable(file: file, logger: logger, problemLogIntervalMilliseconds: 0)
        #expect(table.problem == nil)
        try folder.write("allowed_keys", "admin \(Self.a)\nadmin \(Self.b) x y\n")
        #expect(!table.reloadIfChanged())
        let since = try #require(table.problem?.sinceUnixMilliseconds)
        #expect(table.problem?.message.contains("allowed_keys:2:") == true)
        // Unchanged, still broken: reported again (every interval; 0 here), since unchanged.
        #expect(!table.reloadIfChanged())
        #expect(!table.reloadIfChanged())
        #expect(logs.lines.filter { $0.contains("still not in force") }.count == 2)
        #expect(table.problem?.sinceUnixMilliseconds == since)
        try folder.write("allowed_keys", "admin \(Self.a)\nadmin \(Self.b) b\n")
        #expect(table.reloadIfChanged())
        #expect(table.problem == nil)
        #expect(logs.lines.contains { $0.contains("fixed") })
    }

    @Test func onlyAReloadThatTakesKeysAwayCallsTheRevocationActions() throws {
        let folder = try TemporaryFolder()
        let (logger, _) = collectingLogger()
        let file = try folder.write("allowed_keys", "admin \(Self.a)\n")
        let table = try KeyTable(file: file, logger: logger)
        let calls = Shared(0)
        table.onRevocation { calls.withLock { $0 += 1 } }
        try folder.write("allowed_keys", "admin \(Self.a)\nreader \(Self.b)\n")
        #expect(table.reload())
        #expect(calls.value == 0)
        try folder.write("allowed_keys", "reader \(Self.b)\n")
        #expect(table.reload())
        #expect(calls.value == 1)
    }

    @Test func aMissingFileKeepsThePreviousTableAndAMissingFileAtStartIsAnError() throws {
        let folder = try TemporaryFolder()
        let (logger, logs) = collectingLogger()
        #expect(throws: KeyFileError.self) { try KeyTable(file: folder.file("absent"), logger: logger) }
        let file = try folder.write("allowed_keys", "admin \(Self.a)\n")
        let table = try KeyTable(file: file, logger: logger)
        try FileManager.default.removeItem(atPath: file)
        #expect(!table.reloadIfChanged())
        #expect(!table.reload())
        #expect(table.role(ofUserID: Self.a) == .admin)
        #expect(logs.lines.contains { $0.contains("not reloaded") && $0.contains("No such file") })
        #expect(table.problem?.message.contains("previous allowed keys stay in force") == true)
    }

    @Test func theWatcherNoticesAnEditWithinItsInterval() async throws {
        let folder = try TemporaryFolder()
        let (logger, _) = collectingLogger()
        let file = try folder.write("allowed_keys", "admin \(Self.a)\n")
        let table = try KeyTable(file: file, logger: logger)
        let watcher = table.watcher(intervalMilliseconds: 20)
        try watcher.start()
        try AllowedKeys.edit(file: file) { try $0.allow(AllowedKey(role: .worker, publicKey: Self.b)) }
        let noticed = try await eventually { table.role(ofUserID: Self.b) == .worker }
        await offThePool { watcher.stop() }
        #expect(noticed)
    }
}
