/// Ordered migrations applied by user_version inside one transaction each.
public struct Migrator: Sendable {
    /// The migrations in ascending version order.
    public let migrations: [(version: Int, sql: String)]

    /// Takes migrations with strictly ascending versions ≥ 1; their SQL must not BEGIN or COMMIT itself.
    public init(_ migrations: [(version: Int, sql: String)]) {
        for (previous, next) in zip([(version: 0, sql: "")] + migrations, migrations) {
            precondition(
                next.version > previous.version,
                "migration versions must be ≥ 1 and strictly ascending (got \(next.version) after \(previous.version))"
            )
        }
        self.migrations = migrations
    }

    /// Applies every migration newer than the database's user_version; returns the versions before and after.
    ///
    /// Each migration and its user_version bump commit together, so a failing migration leaves the
    /// database at the previous version. A database newer than every migration is left alone.
    public func migrate(_ db: Database) throws -> (from: Int, to: Int) {
        let from = try db.userVersion
        var current = from
        for migration in migrations where migration.version > current {
            current = try db.inTransaction(.immediate) {
                // Re-read under the write lock: another process may have migrated meanwhile.
                let now = try db.userVersion
                guard now < migration.version else { return now }
                try db.execute(migration.sql)
                try db.setUserVersion(migration.version)
                return migration.version
            }
        }
        return (from, current)
    }
}
