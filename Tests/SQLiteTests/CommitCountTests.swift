import Foundation
import SQLite
import Testing

@Suite("Commit count")
struct CommitCountTests {
    @Test("commitCount counts each write transaction once, whatever its size, and no reads or rollbacks")
    func countsWriteCommits() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("count.sqlite"))
        try db.execute("PRAGMA journal_mode=WAL")
        let start = db.commitCount
        try db.execute("CREATE TABLE t (x INTEGER)")
        #expect(db.commitCount == start + 1)  // in autocommit mode, a statement commits itself

        try db.execute("INSERT INTO t VALUES (1)")
        #expect(db.commitCount == start + 2)
        try db.inTransaction {
            for value in 2...50 { try db.execute("INSERT INTO t VALUES (?)", [.integer(Int64(value))]) }
        }
        #expect(db.commitCount == start + 3)
        _ = try db.query("SELECT * FROM t")
        try db.inTransaction(.deferred) { _ = try db.scalar("SELECT count(*) FROM t") }
        #expect(db.commitCount == start + 3)
        try? db.inTransaction {
            try db.execute("INSERT INTO t VALUES (99)")
            throw CancellationError()
        }
        #expect(db.commitCount == start + 3)
        // A second connection's commits are its own.
        let other = try Database(path: folder.path("count.sqlite"))
        try other.execute("INSERT INTO t VALUES (100)")
        #expect(db.commitCount == start + 3 && other.commitCount == 1)
    }
}
