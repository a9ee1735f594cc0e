import Foundation

/// Reads the values JSONSerialization produces (NSNumber, String, NSNull, [Any], [String: Any])
/// as proto3 JSON scalars, with the error text the CLI shows.
enum JSONValues {
    /// An integer of at most 64 bits of magnitude, as written in the JSON.
    struct Integer {
        var negative: Bool
        var magnitude: UInt64

        var text: String { negative && magnitude != 0 ? "-\(magnitude)" : "\(magnitude)" }
    }

    private static let boolType = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// JSONSerialization returns true/false as a distinct NSNumber subclass (objCType "c").
    static func isBool(_ n: NSNumber) -> Bool {
        ObjectIdentifier(type(of: n)) == boolType || n.objCType.pointee == CChar(UInt8(ascii: "c"))
    }

    /// How a value appears in an error: strings quoted, containers by kind.
    static func describe(_ value: Any) -> String {
        switch value {
        case is NSNull:
            return "null"
        case let n as NSNumber:
            return isBool(n) ? (n.boolValue ? "true" : "false") : n.stringValue
        case let s as String:
            let shown = s.count > 60 ? String(s.prefix(60)) + "…" : s
            return JSONText.quote(shown)
        case is [Any]:
            return "an array"
        case is [String: Any]:
            return "an object"
        default:
            return "\(type(of: value))"
        }
    }

    // MARK: Integers

    /// An integer from a JSON number or decimal string ("123", "-5"); fractions and other types are refused.
    static func integer(_ value: Any, path: String, type: String) throws(ProtoJSONError) -> Integer {
        func invalid() -> ProtoJSONError {
            .field(.invalidValue, path, "expected an integer, got \(describe(value))")
        }
        switch value {
        case let n as NSNumber:
            if isBool(n) { throw invalid() }
            if n is NSDecimalNumber {
                // Integers beyond Int64/UInt64 arrive as NSDecimalNumber; its text is exact.
                if let i = try decimal(n.stringValue, path: path, type: type) { return i }
            }
            switch UInt8(bitPattern: n.objCType.pointee) {
            case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"), UInt8(ascii: "S"), UInt8(ascii: "C"):
                return Integer(negative: false, magnitude: n.uint64Value)
            case UInt8(ascii: "q"), UInt8(ascii: "l"), UInt8(ascii: "i"), UInt8(ascii: "s"), UInt8(ascii: "c"):
                let v = n.int64Value
                return Integer(negative: v < 0, magnitude: v.magnitude)
            default:
                let d = n.doubleValue
                guard d.isFinite, d.rounded(.towardZero) == d else { throw invalid() }
                guard d.magnitude < 18_446_744_073_709_551_616.0 else {
                    throw .field(.outOfRange, path, "\(n.stringValue) is out of range for \(type)")
                }
                return Integer(negative: d < 0, magnitude: UInt64(d.magnitude))
            }
        case let s as String:
            guard let i = try decimal(s, path: path, type: type) else { throw invalid() }
            return i
        default:
            throw invalid()
        }
    }

    /// "-123" → Integer; nil when the text is not an optionally signed run of digits.
    private static func decimal(_ text: String, path: String, type: String) throws(ProtoJSONError) -> Integer? {
        var digits = Substring(text)
        let negative = digits.hasPrefix("-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        guard let magnitude = UInt64(digits) else {
            throw .field(.outOfRange, path, "\(text) is out of range for \(type)")
        }
        return Integer(negative: negative, magnitude: magnitude)
    }

    /// A signed integer within [min, max].
    static func signed(_ value: Any, path: String, type: String, min: Int64, max: Int64) throws(ProtoJSONError) -> Int64 {
        let i = try integer(value, path: path, type: type)
        let v: Int64? =
            if i.negative {
                i.magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- i.magnitude) : nil
            } else {
                Int64(exactly: i.magnitude)
            }
        guard let v, v >= min, v <= max else {
            throw .field(.outOfRange, path, "\(i.text) is out of range for \(type) (\(min) to \(max))")
        }
        return v
    }

    /// An unsigned integer within [0, max].
    static func unsigned(_ value: Any, path: String, type: String, max: UInt64) throws(ProtoJSONError) -> UInt64 {
        let i = try integer(value, path: path, type: type)
        guard !i.negative || i.magnitude == 0, i.magnitude <= max else {
            throw .field(.outOfRange, path, "\(i.text) is out of range for \(type) (0 to \(max))")
        }
        return i.magnitude
    }

    // MARK: Other scalars

    /// A float or double from a JSON number, a numeric string, or "NaN" / "Infinity" / "-Infinity".
    static func floatingPoint(_ value: Any, path: String, isFloat: Bool) throws(ProtoJSONError) -> Double {
        let type = isFloat ? "float" : "double"
        let d: Double
        switch value {
        case let n as NSNumber where !isBool(n):
            // Numbers of many digits arrive as NSDecimalNumber, whose doubleValue is not the
            // nearest double (0.30000000000000004 came out 0.3000000000000001); its text is exact.
            d = n is NSDecimalNumber ? Double(n.stringValue) ?? n.doubleValue : n.doubleValue
        case let s as String:
            switch s {
            case "NaN": return .nan
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default:
                guard let parsed = Double(s), parsed.isFinite else {
                    throw .field(.invalidValue, path, "expected a number, got \(describe(value))")
                }
                d = parsed
            }
        default:
            throw .field(.invalidValue, path, "expected a number, got \(describe(value))")
        }
        guard d.isFinite else { throw .field(.outOfRange, path, "\(describe(value)) is out of range for \(type)") }
        if isFloat && d.magnitude > Double(Float.greatestFiniteMagnitude) {
            throw .field(.outOfRange, path, "\(describe(value)) is out of range for float")
        }
        return d
    }

    static func bool(_ value: Any, path: String) throws(ProtoJSONError) -> Bool {
        guard let n = value as? NSNumber, isBool(n) else {
            throw .field(.invalidValue, path, "expected true or false, got \(describe(value))")
        }
        return n.boolValue
    }

    static func string(_ value: Any, path: String) throws(ProtoJSONError) -> String {
        guard let s = value as? String else {
            throw .field(.invalidValue, path, "expected a string, got \(describe(value))")
        }
        return s
    }

    /// Standard or URL-safe base64, padded or not.
    static func bytes(_ value: Any, path: String) throws(ProtoJSONError) -> [UInt8] {
        guard let s = value as? String else {
            throw .field(.invalidValue, path, "expected a base64 string, got \(describe(value))")
        }
        guard let bytes = ProtoBase64.decode(s) else {
            throw .field(.invalidValue, path, "invalid base64 \(describe(value))")
        }
        return bytes
    }

    /// An enum value by name ("ORIGINAL") or by number (any int32: proto3 enums are open).
    static func enumNumber(_ value: Any, _ schema: EnumSchema, path: String) throws(ProtoJSONError) -> Int32 {
        if let name = value as? String {
            if let number = schema.number(named: name) { return number }
            let names = schema.values.map(\.name).joined(separator: ", ")
            throw .field(
                .invalidValue, path,
                "unknown enum value \(describe(value)) for \(schema.fullName) (one of: \(names))")
        }
        if let n = value as? NSNumber, !isBool(n) {
            return Int32(try signed(value, path: path, type: schema.fullName, min: Int64(Int32.min), max: Int64(Int32.max)))
        }
        throw .field(.invalidValue, path, "expected an enum value name or number for \(schema.fullName), got \(describe(value))")
    }
}
