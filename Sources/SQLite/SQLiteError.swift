import CSQLite

/// A failure reported by SQLite: its extended result code, its message and the SQL that caused it.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The extended result code (`sqlite3_extended_errcode`), e.g. 2067 for SQLITE_CONSTRAINT_UNIQUE.
    public let extendedCode: Int32
    /// SQLite's own message (`sqlite3_errmsg`), e.g. "UNIQUE constraint failed: items.name".
    public let message: String
    /// The SQL text being prepared or run, when there was one.
    public let sql: String?

    /// Creates an error from its parts.
    public init(extendedCode: Int32, message: String, sql: String?) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (the low byte of the extended code), e.g. SQLITE_CONSTRAINT = 19.
    public var primaryCode: Int32 { extendedCode & 0xff }

    /// True for SQLITE_BUSY: another connection holds a lock longer than the busy timeout; retrying may succeed.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY }

    /// True for SQLITE_CONSTRAINT: a UNIQUE, CHECK, NOT NULL, FOREIGN KEY or PRIMARY KEY constraint failed.
    public var isConstraint: Bool { primaryCode == SQLITE_CONSTRAINT }

    /// "SQLite error 2067 (constraint failed): UNIQUE constraint failed: t.x — in: INSERT …".
    public var description: String {
        let generic = String(cString: sqlite3_errstr(extendedCode))
        var text = "SQLite error \(extendedCode) (\(generic)): \(message)"
        if let sql { text += " — in: \(sql)" }
        return text
    }
}

extension SQLiteError {
    /// Builds the error for a failed call from its return code and the connection's last error.
    init(code: Int32, connection: OpaquePointer?, sql: String?) {
        // The connection's error state belongs to the call that just failed only when its
        // primary code agrees; otherwise (e.g. no connection yet) fall back to the code itself.
        if let connection, sqlite3_errcode(connection) & 0xff == code & 0xff {
            self.init(
                extendedCode: sqlite3_extended_errcode(connection),
                message: String(cString: sqlite3_errmsg(connection)),
                sql: sql
            )
        } else {
            self.init(extendedCode: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
        }
    }
}
