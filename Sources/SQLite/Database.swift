import CSQLite

/// One SQLite connection; not Sendable: owned by one thread or actor at a time.
public final class Database {
    /// How to open the file.
    public enum Mode: Sendable {
        /// Read and write; `create` makes the file when it does not exist.
        case readWrite(create: Bool)
        /// Read only; the file must exist.
        case readOnly
    }

    /// How `BEGIN` takes its locks.
    public enum TransactionKind: Sendable {
        /// Locks on first read or write (`BEGIN DEFERRED`).
        case deferred
        /// Takes the write lock at once (`BEGIN IMMEDIATE`), so a busy writer fails early, not at COMMIT.
        case immediate
        /// Takes the write lock and, outside WAL mode, keeps readers out (`BEGIN EXCLUSIVE`).
        case exclusive
    }

    /// The file path given at open.
    public let path: String

    /// The connection; nil once closed.
    private var connection: OpaquePointer?

    /// Live statements, weakly held, so `close()` can finalize them before closing.
    private var statements: [ObjectIdentifier: WeakStatement] = [:]

    /// Write transactions this connection has committed (or begun to commit: SQLite's commit
    /// hook runs just before the commit), counted since it opened. Shows whether writes share a
    /// commit (and its fsync) or each pay for their own.
    public private(set) var commitCount = 0

    /// A weak reference: statements keep their database alive, never the other way round.
    private struct WeakStatement {
        weak var statement: Statement?
    }

    /// Opens (or creates) the database file with extended result codes on.
    public init(path: String, mode: Mode = .readWrite(create: true)) throws {
        self.path = path
        // NOMUTEX: one serial owner per connection, so SQLite's own mutex would only cost.
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWrite(let create):
            flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        case .readOnly:
            flags |= SQLITE_OPEN_READONLY
        }
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let error = SQLiteError(code: rc, connection: handle, sql: nil)
            // A failed open may still allocate a connection, which only close releases.
            sqlite3_close_v2(handle)
            throw error
        }
        connection = handle
        try check(sqlite3_extended_result_codes(handle, 1), sql: nil)
        // Unretained: the hook goes with the connection, which this object closes.
        sqlite3_commit_hook(handle, { context in
            Unmanaged<Database>.fromOpaque(context!).takeUnretainedValue().commitCount += 1
            return 0  // 0 lets the commit go ahead
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        // Statements hold their database, so none is alive here; closing cannot be refused.
        if let connection { sqlite3_close_v2(connection) }
    }

    /// The SQLite library version, e.g. "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// True until `close()`.
    public var isOpen: Bool { connection != nil }

    /// Runs one or more `;`-separated statements without parameters, stepping each to completion.
    public func execute(_ sql: String) throws {
        let db = handle
        try sql.withCString { start in
            var cursor = start
            while cursor.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                try check(sqlite3_prepare_v2(db, cursor, -1, &statement, &tail), sql: sql)
                // Only whitespace or comments were left.
                guard let statement else { break }
                defer { sqlite3_finalize(statement) }
                var rc: Int32
                repeat { rc = sqlite3_step(statement) } while rc == SQLITE_ROW
                try check(rc, sql: String(cString: sqlite3_sql(statement)))
                guard let tail else { break }
                cursor = tail
            }
        }
    }

    /// Runs one statement with positional parameters (`?`), stepping it to completion.
    public func execute(_ sql: String, _ params: [SQLiteValue]) throws {
        let statement = try prepare(sql)
        defer { statement.finalize() }
        try statement.bind(params)
        while try statement.step() {}
    }

    /// Compiles one statement; more than one statement in `sql` is a programmer mistake.
    public func prepare(_ sql: String) throws -> Statement {
        let db = handle
        let compiled: OpaquePointer = try sql.withCString { start in
            var statement: OpaquePointer?
            var tail: UnsafePointer<CChar>?
            try check(sqlite3_prepare_v2(db, start, -1, &statement, &tail), sql: sql)
            guard let statement else {
                preconditionFailure("prepare() needs an SQL statement, got only whitespace or comments: \(sql)")
            }
            if let tail, tail.pointee != 0 {
                var extra: OpaquePointer?
                let rc = sqlite3_prepare_v2(db, tail, -1, &extra, nil)
                sqlite3_finalize(extra)
                if rc != SQLITE_OK || extra != nil {
                    sqlite3_finalize(statement)
                    preconditionFailure("prepare() takes exactly one statement; use execute(_:) for scripts: \(sql)")
                }
            }
            return statement
        }
        let statement = Statement(handle: compiled, database: self, sql: sql)
        statements[ObjectIdentifier(statement)] = WeakStatement(statement: statement)
        return statement
    }

    /// Runs one statement and returns all its rows.
    public func query(_ sql: String, _ params: [SQLiteValue] = []) throws -> [Row] {
        let statement = try prepare(sql)
        defer { statement.finalize() }
        try statement.bind(params)
        return try statement.rows()
    }

    /// The first column of the first row, or nil when there is no row.
    public func scalar(_ sql: String, _ params: [SQLiteValue] = []) throws -> SQLiteValue? {
        let statement = try prepare(sql)
        defer { statement.finalize() }
        try statement.bind(params)
        guard try statement.step() else { return nil }
        return statement.value(at: 0)
    }

    /// The rowid of the most recent successful INSERT on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// `PRAGMA user_version`: the schema version that `Migrator` maintains.
    public var userVersion: Int {
        get throws { Int(try scalar("PRAGMA user_version")?.int64Value ?? 0) }
    }

    /// Sets `PRAGMA user_version`.
    public func setUserVersion(_ version: Int) throws {
        precondition(version >= 0 && version <= Int(Int32.max), "user_version must fit in 0...Int32.max (got \(version))")
        // PRAGMA values cannot be bound; an Int prints safely.
        try execute("PRAGMA user_version = \(version)")
    }

    /// Waits up to `milliseconds` for another connection's lock before failing with SQLITE_BUSY.
    public func setBusyTimeout(milliseconds: Int32) throws {
        try check(sqlite3_busy_timeout(handle, milliseconds), sql: nil)
    }

    /// Rows inserted, updated or deleted since the connection opened (`sqlite3_total_changes64`).
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// The write-ahead log's absolute path while the connection is in WAL mode, else nil.
    public var writeAheadLogPath: String? {
        guard let mode = try? scalar("PRAGMA journal_mode")?.stringValue, mode.lowercased() == "wal",
            let file = sqlite3_db_filename(handle, "main"), file.pointee != 0
        else { return nil }
        return String(cString: file) + "-wal"
    }

    /// True when no transaction is open (SQLite's autocommit mode).
    public var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Runs `body` in BEGIN…COMMIT; rolls back on throw and rethrows the FIRST error (a failing ROLLBACK never hides it).
    public func inTransaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        precondition(isAutocommit, "inTransaction cannot nest: a transaction is already open")
        switch kind {
        case .deferred: try execute("BEGIN DEFERRED")
        case .immediate: try execute("BEGIN IMMEDIATE")
        case .exclusive: try execute("BEGIN EXCLUSIVE")
        }
        let result: T
        do {
            result = try body()
        } catch {
            // SQLite may already have rolled back (e.g. SQLITE_FULL); a second ROLLBACK would only fail.
            if !isAutocommit { try? execute("ROLLBACK") }
            throw error
        }
        try commit()
        return result
    }

    /// Commits the open transaction. An I/O error at COMMIT leaves its outcome unknown (the log
    /// may hold the commit although its fsync failed: recovery at the next open would bring it
    /// back): that is ``CommitOutcomeUnknown``, never a plain failure a caller would undo.
    /// Any other failure rolls back: nothing of the transaction is kept.
    public func commit() throws {
        do {
            try execute("COMMIT")
        } catch let error as SQLiteError where error.isIOError {
            if !isAutocommit { try? execute("ROLLBACK") }
            throw CommitOutcomeUnknown(reason: "\(error)")
        } catch {
            if !isAutocommit { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Finalizes every statement still open, then closes the connection; calling it again does nothing.
    public func close() throws {
        guard let connection else { return }
        for entry in statements.values { entry.statement?.finalize() }
        statements.removeAll()
        try check(sqlite3_close(connection), sql: nil)
        self.connection = nil
    }

    /// The open connection; using a closed database is a programmer mistake.
    var handle: OpaquePointer {
        guard let connection else { preconditionFailure("Database \(path) used after close()") }
        return connection
    }

    /// The one place where SQLite return codes become errors: OK, ROW and DONE pass, anything else throws.
    func check(_ rc: Int32, sql: String?) throws(SQLiteError) {
        switch rc {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE: return
        default: throw SQLiteError(code: rc, connection: connection, sql: sql)
        }
    }

    /// Called by a statement's finalize so close() does not finalize it twice.
    func forget(_ statement: Statement) {
        statements[ObjectIdentifier(statement)] = nil
    }
}

@available(*, unavailable, message: "A connection belongs to one thread or actor at a time")
extension Database: Sendable {}
