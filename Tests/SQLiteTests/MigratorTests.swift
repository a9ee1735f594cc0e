import Foundation
import SQLite
import Testing

@Suite("Migrator")
struct MigratorTests {
    static let migrations: [(version: Int, sql: String)] = [
        (1, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"),
        (2, "ALTER TABLE items ADD COLUMN value INTEGER NOT NULL DEFAULT 0"),
        (3, "CREATE INDEX items_by_name ON items (name); INSERT INTO items (name, value) VALUES ('seed', 3)"),
    ]

    @Test("migrations apply in order and a reopened database applies nothing again")
    func appliesInOrderIdempotently() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("migrate.sqlite")
        let db = try Database(path: path)
        let result = try Migrator(Self.migrations).migrate(db)
        #expect(result == (from: 0, to: 3))
        #expect(try db.userVersion == 3)
        #expect(try db.scalar("SELECT value FROM items WHERE name = 'seed'") == .integer(3))
        try db.close()

        let reopened = try Database(path: path)
        let again = try Migrator(Self.migrations).migrate(reopened)
        #expect(again == (from: 3, to: 3))
        #expect(try reopened.scalar("SELECT count(*) FROM items") == .integer(1))
    }

    @Test("a later migration list applies only the new versions")
    func appliesOnlyNewVersions() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("partial.sqlite"))
        #expect(try Migrator(Array(Self.migrations.prefix(1))).migrate(db) == (from: 0, to: 1))
        #expect(try Migrator(Self.migrations).migrate(db) == (from: 1, to: 3))
    }

    @Test("a failing migration rolls back entirely and leaves user_version at the last good version")
    func failingMigrationRollsBack() throws {
        let folder = try TemporaryDirectory()
        let db = try Database(path: folder.path("failing.sqlite"))
        let broken = Self.migrations.prefix(2) + [
            (3, "CREATE TABLE extra (x); INSERT INTO no_such_table VALUES (1)")
        ]
        let error = try #require(throws: SQLiteError.self) { try Migrator(Array(broken)).migrate(db) }
        #expect(error.message.contains("no_such_table"))
        #expect(try db.userVersion == 2)
        #expect(try db.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'extra'") == .integer(0))
        #expect(db.isAutocommit)
    }
}
