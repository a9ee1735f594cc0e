import Foundation
import SQLite
import Testing

@Suite("Functions")
struct FunctionTests {
    @Test("a registered function gets its arguments and returns each kind of value")
    func roundTrip() throws {
        let db = try Database(path: ":memory:")
        try db.createFunction("echo", argumentCount: 1) { $0[0] }
        try db.createFunction("arguments", argumentCount: -1) { .integer(Int64($0.count)) }
        for value: SQLiteValue in [.null, .integer(-7), .real(2.5), .text(""), .text("Rusty Spörk"), .blob([]), .blob([0, 255, 1])] {
            #expect(try db.scalar("SELECT echo(?)", [value]) == value)
        }
        #expect(try db.scalar("SELECT arguments(1, 'a', NULL)") == .integer(3))
        // Registering the same name and count again replaces the first.
        try db.createFunction("echo", argumentCount: 1) { _ in .text("replaced") }
        #expect(try db.scalar("SELECT echo(1)") == .text("replaced"))
    }

    @Test("an SQLiteError thrown by a function fails the statement with its code; an I/O error in a SELECT rolls back the transaction")
    func errorsAreSQLiteFailures() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("functions.sqlite"))
        try db.execute("CREATE TABLE t (x INTEGER)")
        try db.createFunction("disk_fault") { _ in throw SQLiteError(extendedCode: 10, message: "injected I/O error", sql: nil) }
        try db.createFunction("plain_fault") { _ in throw CancellationError() }

        try db.execute("BEGIN IMMEDIATE")
        try db.execute("INSERT INTO t VALUES (1)")
        let plain = try #require(throws: SQLiteError.self) { try db.scalar("SELECT plain_fault()") }
        #expect(plain.primaryCode == 1 && plain.message.contains("CancellationError"))
        #expect(!db.isAutocommit, "SQLITE_ERROR fails the statement only")
        // FROM t: SQLite rolls back only for a statement that reads the database.
        let disk = try #require(throws: SQLiteError.self) { try db.scalar("SELECT disk_fault() FROM t") }
        #expect(disk.extendedCode == 10 && disk.message == "injected I/O error")
        #expect(db.isAutocommit, "SQLite rolled back the whole transaction for SQLITE_IOERR in a read")
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
    }
}
