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
        #expect(logs.lines.contains { $0.contains("unreadable") })
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
