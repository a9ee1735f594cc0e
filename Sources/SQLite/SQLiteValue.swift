/// One SQLite value: the five storage classes.
public enum SQLiteValue: Sendable, Equatable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes; an empty blob is distinct from NULL.
    case blob([UInt8])

    /// True for `.null`.
    public var isNull: Bool { self == .null }

    /// The integer, or nil when the value is not `.integer`.
    public var int64Value: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The number as a Double for `.real` and `.integer`, else nil.
    public var doubleValue: Double? {
        switch self {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The text, or nil when the value is not `.text`.
    public var stringValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes, or nil when the value is not `.blob`.
    public var blobValue: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }
}

extension SQLiteValue: ExpressibleByNilLiteral {
    /// `nil` is SQL NULL.
    public init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    /// An integer literal is `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    /// A float literal is `.real`.
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    /// A string literal is `.text`.
    public init(stringLiteral value: String) { self = .text(value) }
}
