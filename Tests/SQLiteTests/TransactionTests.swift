import Foundation
import SQLite
import Testing

/// An error thrown by test bodies to tell it apart from SQLite's.
private struct BodyError: Error, Equatable {}

@Suite("Transactions")
struct TransactionTests {
    @Test("inTransaction commits the body's writes and returns its result")
    func commits() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("commit.sqlite")
        let db = try Database(path: path)
        try db.execute("CREATE TABLE t (x INTEGER)")
        let result = try db.inTransaction {
            try db.execute("INSERT INTO t VALUES (1)")
            try db.execute("INSERT INTO t VALUES (2)")
            return "done"
        }
        #expect(result == "done")
        #expect(db.isAutocommit)
        let other = try Database(path: path)
        #expect(try other.scalar("SELECT count(*) FROM t") == .integer(2))
    }

    @Test("inTransaction rolls back every write when the body throws, and rethrows that error")
    func rollsBack() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("rollback.sqlite"))
        try db.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        #expect(throws: BodyError()) {
            try db.inTransaction {
                try db.execute("INSERT INTO t VALUES (1)")
                throw BodyError()
            }
        }
        let constraint = try #require(throws: SQLiteError.self) {
            try db.inTransaction(.deferred) {
                try db.execute("INSERT INTO t VALUES (5)")
                try db.execute("INSERT INTO t VALUES (5)")
            }
        }
        #expect(constraint.isConstraint)
        #expect(db.isAutocommit)
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
    }

    @Test("the body's error wins when the transaction is already gone and ROLLBACK would fail")
    func firstErrorWins() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("first.sqlite"))
        try db.execute("CREATE TABLE t (x INTEGER)")
        #expect(throws: BodyError()) {
            try db.inTransaction(.exclusive) {
                try db.execute("INSERT INTO t VALUES (1)")
                // Ends the transaction behind inTransaction's back: a ROLLBACK now fails with
                // "no transaction is active", which must not replace BodyError.
                try db.execute("ROLLBACK")
                throw BodyError()
            }
        }
        #expect(db.isAutocommit)
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
    }

    @Test("a second connection gets SQLITE_BUSY after its timeout while a WAL writer holds BEGIN IMMEDIATE")
    func busyWhileImmediateWriter() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("busy-wal.sqlite")
        let writer = try Database(path: path)
        #expect(try writer.scalar("PRAGMA journal_mode = WAL") == .text("wal"))
        try writer.execute("CREATE TABLE t (x INTEGER)")
        let other = try Database(path: path)
        try other.setBusyTimeout(milliseconds: 100)
        try writer.inTransaction(.immediate) {
            try writer.execute("INSERT INTO t VALUES (1)")
            let start = ContinuousClock.now
            let error = try #require(throws: SQLiteError.self) {
                try other.inTransaction(.immediate) { try other.execute("INSERT INTO t VALUES (2)") }
            }
            let waited = ContinuousClock.now - start
            #expect(error.isBusy)
            #expect(error.primaryCode == 5)  // SQLITE_BUSY
            #expect(waited >= .milliseconds(90))
            // WAL readers are not blocked by the writer and see the last committed state.
            #expect(try other.scalar("SELECT count(*) FROM t") == .integer(0))
        }
        #expect(try other.scalar("SELECT count(*) FROM t") == .integer(1))
    }

    @Test("a reader gets SQLITE_BUSY while a rollback-journal writer holds BEGIN EXCLUSIVE")
    func busyWhileExclusiveWriter() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("busy-exclusive.sqlite")
        let writer = try Database(path: path)
        try writer.execute("CREATE TABLE t (x INTEGER)")
        let reader = try Database(path: path)
        try reader.setBusyTimeout(milliseconds: 50)
        try writer.execute("BEGIN EXCLUSIVE")
        try writer.execute("INSERT INTO t VALUES (1)")
        let error = try #require(throws: SQLiteError.self) { try reader.scalar("SELECT count(*) FROM t") }
        #expect(error.isBusy)
        try writer.execute("COMMIT")
        #expect(try reader.scalar("SELECT count(*) FROM t") == .integer(1))
    }
}
