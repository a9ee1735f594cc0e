import Foundation
import SQLite
import Testing

@Suite("Database")
struct DatabaseTests {
    @Test("every value type round-trips: unicode text, empty blob vs NULL, Int64 extremes")
    func valuesRoundTrip() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("values.sqlite"))
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v)")
        let values: [SQLiteValue] = [
            .null,
            .integer(Int64.max),
            .integer(Int64.min),
            .integer(0),
            .real(-1.5e300),
            .real(0.1),
            .text("héllo 🌍 日本語 \u{0}embedded-nul"),
            .text(""),
            .blob([]),
            .blob([0, 1, 2, 255, 0]),
        ]
        for value in values {
            try db.execute("INSERT INTO t (v) VALUES (?)", [value])
            #expect(db.changes == 1)
        }
        #expect(db.lastInsertRowID == Int64(values.count))
        let rows = try db.query("SELECT v, typeof(v) AS kind FROM t ORDER BY id")
        #expect(rows.map { $0[0] } == values)
        #expect(rows.map { $0.string("kind") } == [
            "null", "integer", "integer", "integer", "real", "real", "text", "text", "blob", "blob",
        ])
        // The empty blob must stay a blob, not become NULL.
        #expect(try db.scalar("SELECT count(*) FROM t WHERE v IS NULL") == .integer(1))
        #expect(try db.scalar("SELECT length(v) FROM t WHERE id = 9") == .integer(0))
    }

    @Test("rows are addressable by position and case-insensitive name; scalar is nil without a row")
    func rowsByName() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("rows.sqlite"))
        try db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, photo BLOB)")
        try db.execute("INSERT INTO items (name, price, photo) VALUES (?, ?, ?)", ["Lamp", 12.5, .blob([9, 8])])
        let row = try #require(try db.query("SELECT * FROM items").first)
        #expect(row.columnNames == ["id", "name", "price", "photo"])
        #expect(row.int64("ID") == 1)
        #expect(row.string("name") == "Lamp")
        #expect(row.double("price") == 12.5)
        #expect(row.blob("photo") == [9, 8])
        #expect(row["missing"] == nil)
        #expect(try db.scalar("SELECT name FROM items WHERE id = ?", [42]) == nil)
    }

    @Test("a prepared statement binds named parameters and runs again after bind")
    func statementReuse() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("stmt.sqlite"))
        try db.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)")
        let insert = try db.prepare("INSERT INTO kv (k, v) VALUES (:k, :v)")
        for i in 0..<5 {
            try insert.bind([":k": .text("key\(i)"), ":v": .integer(Int64(i * i))])
            #expect(try insert.step() == false)
        }
        let select = try db.prepare("SELECT k, v FROM kv WHERE v >= ? ORDER BY v")
        try select.bind([4])
        #expect(select.columnCount == 2)
        #expect(select.columnName(1) == "v")
        #expect(try select.step())
        #expect(select.string(at: 0) == "key2")
        #expect(select.int64(at: 1) == 4)
        #expect(select.isNull(at: 1) == false)
        try select.bind([10])
        #expect(try select.rows().map { $0.int64("v") } == [16])
    }

    @Test("a script with several statements runs in order")
    func executeScript() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("script.sqlite"))
        try db.execute("""
            CREATE TABLE a (x INTEGER); -- a comment
            INSERT INTO a VALUES (1);
            INSERT INTO a VALUES (2);
            SELECT * FROM a;
            """)
        #expect(try db.scalar("SELECT sum(x) FROM a") == .integer(3))
    }

    @Test("a syntax error carries SQLITE_ERROR, SQLite's message and the SQL text")
    func syntaxError() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("syntax.sqlite"))
        let error = try #require(throws: SQLiteError.self) { try db.execute("SELEC 1") }
        #expect(error.primaryCode == 1)
        #expect(error.message.contains("syntax error"))
        #expect(error.sql == "SELEC 1")
        #expect(error.description.contains("SELEC 1"))
    }

    @Test("a UNIQUE violation gives SQLITE_CONSTRAINT_UNIQUE naming the column; a CHECK names its constraint")
    func constraintViolation() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("constraint.sqlite"))
        try db.execute("""
            CREATE TABLE items (
                name TEXT UNIQUE,
                value INTEGER CONSTRAINT value_not_negative CHECK (value >= 0)
            )
            """)
        try db.execute("INSERT INTO items VALUES (?, ?)", ["lamp", 1])
        let unique = try #require(throws: SQLiteError.self) {
            try db.execute("INSERT INTO items VALUES (?, ?)", ["lamp", 2])
        }
        #expect(unique.isConstraint)
        #expect(unique.primaryCode == 19)  // SQLITE_CONSTRAINT
        #expect(unique.extendedCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(unique.message.contains("items.name"))
        let check = try #require(throws: SQLiteError.self) {
            try db.execute("INSERT INTO items VALUES (?, ?)", ["chair", -5])
        }
        #expect(check.extendedCode == 275)  // SQLITE_CONSTRAINT_CHECK
        #expect(check.message.contains("value_not_negative"))
        #expect(check.isBusy == false)
    }

    @Test("WAL journal mode and synchronous=FULL are set and read back, also from a new connection")
    func walAndSynchronous() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("wal.sqlite")
        let db = try Database(path: path)
        #expect(try db.scalar("PRAGMA journal_mode = WAL") == .text("wal"))
        try db.execute("PRAGMA synchronous = FULL")
        #expect(try db.scalar("PRAGMA synchronous") == .integer(2))
        try db.execute("CREATE TABLE t (x)")
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        try db.close()
        // WAL mode is stored in the file; synchronous is per connection and defaults back.
        let reopened = try Database(path: path)
        #expect(try reopened.scalar("PRAGMA journal_mode") == .text("wal"))
    }

    @Test("data persists after close and reopen; close is idempotent and finalizes open statements")
    func persistence() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("persist.sqlite")
        let db = try Database(path: path)
        try db.execute("CREATE TABLE t (x TEXT)")
        try db.execute("INSERT INTO t VALUES (?)", ["kept"])
        let pending = try db.prepare("SELECT x FROM t")
        #expect(try pending.step())
        try db.close()
        try db.close()
        #expect(db.isOpen == false)
        let reopened = try Database(path: path, mode: .readOnly)
        #expect(try reopened.scalar("SELECT x FROM t") == .text("kept"))
        let error = try #require(throws: SQLiteError.self) { try reopened.execute("INSERT INTO t VALUES ('no')") }
        #expect(error.primaryCode == 8)  // SQLITE_READONLY
    }

    @Test("opening a missing file without create fails with SQLITE_CANTOPEN")
    func openMissingFile() throws {
        let folder = try TemporaryDirectory()
        let error = try #require(throws: SQLiteError.self) {
            try Database(path: folder.path("absent.sqlite"), mode: .readWrite(create: false))
        }
        #expect(error.primaryCode == 14)  // SQLITE_CANTOPEN
    }

    @Test("user_version is set and read back")
    func userVersion() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("uv.sqlite"))
        #expect(try db.userVersion == 0)
        try db.setUserVersion(7)
        #expect(try db.userVersion == 7)
        #expect(Database.libraryVersion.hasPrefix("3."))
    }
}
