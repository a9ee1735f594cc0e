/// Writes JSON text directly, so key order is exactly the order given (field-number order)
/// and the layout is stable: two-space indentation, or one line without spaces.
struct JSONText {
    let pretty: Bool

    /// `{"a": 1}`; `values` are already rendered for nesting level `level + 1`.
    func object(_ members: [(key: String, value: String)], level: Int) -> String {
        guard !members.isEmpty else { return "{}" }
        let separator = pretty ? ": " : ":"
        return container("{", "}", members.map { JSONText.quote($0.key) + separator + $0.value }, level: level)
    }

    /// `[1, 2]`; `values` are already rendered for nesting level `level + 1`.
    func array(_ values: [String], level: Int) -> String {
        guard !values.isEmpty else { return "[]" }
        return container("[", "]", values, level: level)
    }

    private func container(_ open: String, _ close: String, _ items: [String], level: Int) -> String {
        guard pretty else { return open + items.joined(separator: ",") + close }
        let inner = String(repeating: "  ", count: level + 1)
        let outer = String(repeating: "  ", count: level)
        return open + "\n" + items.map { inner + $0 }.joined(separator: ",\n") + "\n" + outer + close
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped; U+2028 and U+2029
    /// escaped too so the text is also valid JavaScript. Everything else is kept as UTF-8.
    static func quote(_ s: String) -> String {
        func needsEscape(_ u: Unicode.Scalar) -> Bool {
            u.value < 0x20 || u == "\"" || u == "\\" || u.value == 0x2028 || u.value == 0x2029
        }
        guard s.unicodeScalars.contains(where: needsEscape) else { return "\"" + s + "\"" }
        var out = "\""
        out.reserveCapacity(s.utf8.count + 8)
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if needsEscape(u) {
                    let hex = String(u.value, radix: 16, uppercase: false)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    /// A double as proto3 JSON: a number, or "NaN" / "Infinity" / "-Infinity" as strings.
    static func number(_ d: Double) -> String {
        if d.isNaN { return "\"NaN\"" }
        if d.isInfinite { return d < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
        return "\(d)"
    }

    /// A float printed with float precision ("0.1", not "0.10000000149011612").
    static func number(_ f: Float) -> String {
        if f.isNaN { return "\"NaN\"" }
        if f.isInfinite { return f < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
        return "\(f)"
    }
}
