import CSQLite

/// A compiled SQL statement of one `Database`; finalized on deinit or when its database closes.
public final class Statement {
    /// The SQL text it was compiled from.
    public let sql: String

    /// The compiled statement; nil once finalized.
    private var handle: OpaquePointer?

    /// Held strongly so the connection outlives every statement compiled on it.
    private let database: Database

    init(handle: OpaquePointer, database: Database, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit {
        if let handle {
            sqlite3_finalize(handle)
            database.forget(self)
        }
    }

    /// Releases the compiled statement; later use is a programmer mistake.
    func finalize() {
        guard let handle else { return }
        // finalize only repeats the last step's error, which step() already threw.
        sqlite3_finalize(handle)
        self.handle = nil
        database.forget(self)
    }

    /// The live statement; using one after its database closed is a programmer mistake.
    private var live: OpaquePointer {
        guard let handle else { preconditionFailure("Statement used after its database was closed: \(sql)") }
        return handle
    }

    // MARK: Binding

    /// The number of parameters (`?`, `?NNN`, `:name`, `@name`, `$name`) in the SQL.
    public var parameterCount: Int32 { sqlite3_bind_parameter_count(live) }

    /// Rewinds the statement, clears old bindings and binds `params` to parameters 1...n.
    public func bind(_ params: [SQLiteValue]) throws {
        precondition(
            params.count == Int(parameterCount),
            "\(sql) takes \(parameterCount) parameters, got \(params.count)"
        )
        rewind()
        for (offset, value) in params.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Rewinds the statement, clears old bindings and binds each value by its parameter name, e.g. ":id".
    public func bind(_ params: [String: SQLiteValue]) throws {
        rewind()
        for (name, value) in params {
            try bind(value, named: name)
        }
    }

    /// Binds one value to the parameter with this name, including its prefix (":id", "@id" or "$id").
    public func bind(_ value: SQLiteValue, named name: String) throws {
        let index = sqlite3_bind_parameter_index(live, name)
        precondition(index > 0, "\(sql) has no parameter named \(name)")
        try bind(value, at: index)
    }

    /// Binds one value to parameter `index` (1-based); text and blobs are copied.
    public func bind(_ value: SQLiteValue, at index: Int32) throws {
        let statement = live
        precondition(
            index >= 1 && index <= sqlite3_bind_parameter_count(statement),
            "parameter index \(index) is outside 1...\(sqlite3_bind_parameter_count(statement)) in \(sql)"
        )
        let rc: Int32
        switch value {
        case .null:
            rc = sqlite3_bind_null(statement, index)
        case .integer(let number):
            rc = sqlite3_bind_int64(statement, index, number)
        case .real(let number):
            rc = sqlite3_bind_double(statement, index, number)
        case .text(let text):
            var text = text
            rc = text.withUTF8 { bytes in
                // A nil pointer would bind NULL, so empty text gets a valid (empty) C string instead.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text64(statement, index, "", 0, hp_sqlite_transient(), UInt8(SQLITE_UTF8))
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                    sqlite3_bind_text64(
                        statement, index, chars, sqlite3_uint64(bytes.count), hp_sqlite_transient(), UInt8(SQLITE_UTF8)
                    )
                }
            }
        case .blob(let bytes):
            // A nil pointer would bind NULL; zeroblob(0) is the empty blob.
            rc = bytes.isEmpty
                ? sqlite3_bind_zeroblob(statement, index, 0)
                : bytes.withUnsafeBytes { raw in
                    sqlite3_bind_blob64(
                        statement, index, raw.baseAddress, sqlite3_uint64(raw.count), hp_sqlite_transient()
                    )
                }
        }
        try database.check(rc, sql: sql)
    }

    // MARK: Stepping

    /// Advances to the next row: true when a row is available, false when the statement is done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(live)
        try database.check(rc, sql: sql)
        return rc == SQLITE_ROW
    }

    /// Rewinds so the statement can run again with its current bindings; rethrows the last step's error, if any.
    public func reset() throws {
        try database.check(sqlite3_reset(live), sql: sql)
    }

    /// Steps to completion from the current position and collects every row.
    public func rows() throws -> [Row] {
        let columns = Row.Columns(names: (0..<columnCount).map(columnName))
        var rows: [Row] = []
        while try step() {
            rows.append(Row(columns: columns, values: (0..<columnCount).map(value(at:))))
        }
        return rows
    }

    /// Steps to completion from the current position, handing each row to `body` as it comes:
    /// memory does not grow with the result.
    public func forEachRow(_ body: (Row) throws -> Void) throws {
        let columns = Row.Columns(names: (0..<columnCount).map(columnName))
        while try step() {
            try body(Row(columns: columns, values: (0..<columnCount).map(value(at:))))
        }
    }

    /// Rewinds without reporting: sqlite3_reset only repeats the previous step's error, already thrown by step().
    private func rewind() {
        sqlite3_reset(live)
        sqlite3_clear_bindings(live)
    }

    // MARK: Columns

    /// The number of result columns.
    public var columnCount: Int { Int(sqlite3_column_count(live)) }

    /// The name of result column `index` (0-based), as SQLite reports it (the alias when there is one).
    public func columnName(_ index: Int) -> String {
        precondition(index >= 0 && index < columnCount, "column \(index) is outside 0..<\(columnCount) in \(sql)")
        return String(cString: sqlite3_column_name(live, Int32(index)))
    }

    /// The value of column `index` (0-based) in the current row.
    public func value(at index: Int) -> SQLiteValue {
        let statement = live
        precondition(index >= 0 && index < columnCount, "column \(index) is outside 0..<\(columnCount) in \(sql)")
        let column = Int32(index)
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // Ask for the pointer before the length, as the SQLite docs require.
            guard let text = sqlite3_column_text(statement, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            // An empty blob comes back as a nil pointer.
            guard let blob = sqlite3_column_blob(statement, column) else { return .blob([]) }
            let count = Int(sqlite3_column_bytes(statement, column))
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default:
            return .null
        }
    }

    /// True when column `index` is NULL in the current row.
    public func isNull(at index: Int) -> Bool { value(at: index).isNull }

    /// Column `index` as an integer; nil unless it holds an integer.
    public func int64(at index: Int) -> Int64? { value(at: index).int64Value }

    /// Column `index` as a Double; nil unless it holds a real or an integer.
    public func double(at index: Int) -> Double? { value(at: index).doubleValue }

    /// Column `index` as text; nil unless it holds text.
    public func string(at index: Int) -> String? { value(at: index).stringValue }

    /// Column `index` as bytes; nil unless it holds a blob.
    public func blob(at index: Int) -> [UInt8]? { value(at: index).blobValue }
}

@available(*, unavailable, message: "A statement belongs to its database's owner")
extension Statement: Sendable {}
