/// One result row: its values by position or by column name.
public struct Row: Sendable, Equatable {
    /// Column names and a case-insensitive name lookup, shared by every row of a result.
    struct Columns: Sendable, Equatable {
        let names: [String]
        let positions: [String: Int]

        init(names: [String]) {
            self.names = names
            var positions: [String: Int] = [:]
            // SQLite matches column names case-insensitively; the first of duplicate names wins.
            for (index, name) in names.enumerated() where positions[name.lowercased()] == nil {
                positions[name.lowercased()] = index
            }
            self.positions = positions
        }
    }

    let columns: Columns

    /// The values in column order.
    public let values: [SQLiteValue]

    init(columns: Columns, values: [SQLiteValue]) {
        self.columns = columns
        self.values = values
    }

    /// The column names in order.
    public var columnNames: [String] { columns.names }

    /// The number of columns.
    public var count: Int { values.count }

    /// The value at column `index` (0-based).
    public subscript(_ index: Int) -> SQLiteValue {
        precondition(index >= 0 && index < values.count, "column \(index) is outside 0..<\(values.count)")
        return values[index]
    }

    /// The value of the named column (case-insensitive), or nil when there is no such column.
    public subscript(_ name: String) -> SQLiteValue? {
        columns.positions[name.lowercased()].map { values[$0] }
    }

    /// The named column as an integer; nil when absent or not an integer.
    public func int64(_ name: String) -> Int64? { self[name]?.int64Value }

    /// The named column as a Double; nil when absent or neither real nor integer.
    public func double(_ name: String) -> Double? { self[name]?.doubleValue }

    /// The named column as text; nil when absent or not text.
    public func string(_ name: String) -> String? { self[name]?.stringValue }

    /// The named column as bytes; nil when absent or not a blob.
    public func blob(_ name: String) -> [UInt8]? { self[name]?.blobValue }

    /// True when the named column is NULL; nil when there is no such column.
    public func isNull(_ name: String) -> Bool? { self[name]?.isNull }
}
