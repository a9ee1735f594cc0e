import Foundation

/// Checks of client input; each failure names the field and the value it got.
public enum ItemInput {
    /// The longest name, in characters.
    public static let maxNameLength = 256
    /// The longest serial number, in characters.
    public static let maxSerialLength = 64
    /// The largest value in dollars: beyond it a value is a typo, not a possession.
    public static let maxValueInDollars: Int64 = 1_000_000_000
    /// The longest ListItems query, in characters.
    public static let maxQueryLength = 256
    /// The most photos one item holds.
    public static let maxPhotosPerItem = 100

    /// A UUID in its canonical lower-case form; `field` names it in the error.
    public static func key(_ text: String, field: String) throws(ItemStoreError) -> String {
        guard !text.isEmpty else { throw .invalidArgument("\(field) must be a UUID (got an empty string)") }
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else {
            throw .invalidArgument("\(field) must be a UUID like 7f9c24e8-3b1a-4c2d-9e8f-0a1b2c3d4e5f (got \(quoted(text)))")
        }
        return uuid.uuidString.lowercased()
    }

    /// A name: not blank, at most `maxNameLength` characters, no control characters.
    public static func name(_ text: String) throws(ItemStoreError) -> String {
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw .invalidArgument("name must not be empty or blank (got \(quoted(text)))")
        }
        guard text.count <= maxNameLength else {
            throw .invalidArgument("name must be at most \(maxNameLength) characters (got \(text.count))")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidArgument("name must not contain control characters (got \(quoted(text)))")
        }
        return text
    }

    /// A serial number: may be empty, at most `maxSerialLength` characters, no control characters.
    public static func serial(_ text: String) throws(ItemStoreError) -> String {
        guard text.count <= maxSerialLength else {
            throw .invalidArgument("serial_number must be at most \(maxSerialLength) characters (got \(text.count))")
        }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidArgument("serial_number must not contain control characters (got \(quoted(text)))")
        }
        return text
    }

    /// A value in dollars: 0…`maxValueInDollars`.
    public static func value(_ value: Int64) throws(ItemStoreError) -> Int64 {
        guard value >= 0 else { throw .invalidArgument("value_in_dollars must be ≥ 0 (got \(value))") }
        guard value <= maxValueInDollars else {
            throw .invalidArgument("value_in_dollars must be ≤ \(maxValueInDollars) (got \(value))")
        }
        return value
    }

    /// A value for a message, quoted and cut to 80 characters.
    static func quoted(_ text: String) -> String {
        let cut = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return "\"" + cut.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
