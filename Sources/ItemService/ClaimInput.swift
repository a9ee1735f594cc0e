import Foundation
import Proto

/// Checks of the claim fields (locations, categories, the policy, an item's claim fields); each
/// failure names the field and the value it got, like `ItemInput`'s.
public enum ClaimInput {
    /// The longest location name, in characters.
    public static let maxLocationNameLength = 128
    /// The longest category name, in characters.
    public static let maxCategoryNameLength = 64
    /// The longest brand, model, place, source or policy text, in characters.
    public static let maxShortTextLength = 256
    /// The longest notes, in characters.
    public static let maxNotesLength = 4096
    /// The most tags on one item, and the longest tag.
    public static let maxTags = 32
    public static let maxTagLength = 64
    /// The most custom fields on one item, the longest name and the longest value.
    public static let maxCustomFields = 50
    public static let maxCustomFieldNameLength = 64
    public static let maxCustomFieldValueLength = 1024
    /// The largest quantity of one item.
    public static let maxQuantity: Int32 = 100_000
    /// The largest amount of money in minor units (10^15: ten trillion dollars in cents).
    public static let maxMinorUnits: Int64 = 1_000_000_000_000_000
    /// The most nested a location may be (home → floor → room → container → ... ).
    public static let maxLocationDepth = 16

    /// Free text: at most `limit` characters, no control characters but, when `multiline`,
    /// line breaks and tabs.
    public static func text(_ text: String, field: String, limit: Int = maxShortTextLength, multiline: Bool = false) throws(ItemStoreError)
        -> String
    {
        guard text.count <= limit else {
            throw .invalidArgument("\(field) must be at most \(limit) characters (got \(text.count))")
        }
        let allowed: Set<Unicode.Scalar> = multiline ? ["\n", "\r", "\t"] : []
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !allowed.contains($0) }) else {
            throw .invalidArgument("\(field) must not contain control characters (got \(ItemInput.quoted(text)))")
        }
        return text
    }

    /// A name that must not be blank: a location's or a category's.
    public static func name(_ text: String, field: String = "name", limit: Int) throws(ItemStoreError) -> String {
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw .invalidArgument("\(field) must not be empty or blank (got \(ItemInput.quoted(text)))")
        }
        return try self.text(text, field: field, limit: limit)
    }

    /// An optional UUID: '' stays ''.
    public static func optionalKey(_ text: String, field: String) throws(ItemStoreError) -> String {
        text.isEmpty ? "" : try ItemInput.key(text, field: field)
    }

    /// A quantity: 0 means 1; otherwise 1…`maxQuantity`.
    public static func quantity(_ value: Int32) throws(ItemStoreError) -> Int32 {
        guard value >= 0 else { throw .invalidArgument("quantity must be ≥ 1 (got \(value)); 0 means 1") }
        guard value <= maxQuantity else { throw .invalidArgument("quantity must be ≤ \(maxQuantity) (got \(value))") }
        return max(value, 1)
    }

    /// A date as YYYY-MM-DD ('' stays ''), a real day between the years 1000 and 9999.
    public static func date(_ text: String, field: String) throws(ItemStoreError) -> String {
        guard !text.isEmpty else { return "" }
        guard CalendarDate(text) != nil else {
            throw .invalidArgument("\(field) must be a date as YYYY-MM-DD, like 2024-03-17 (got \(ItemInput.quoted(text)))")
        }
        return text
    }

    /// An amount: nil or 0 is no amount (currency and units both cleared); a currency of three
    /// upper-case letters or '' (the policy's); 0…`maxMinorUnits` minor units.
    public static func money(_ money: Money?, field: String) throws(ItemStoreError) -> Money? {
        guard let money, money.minorUnits != 0 || !money.currency.isEmpty else { return nil }
        guard money.minorUnits >= 0 else {
            throw .invalidArgument("\(field).minor_units must be ≥ 0 (got \(money.minorUnits))")
        }
        guard money.minorUnits <= maxMinorUnits else {
            throw .invalidArgument("\(field).minor_units must be ≤ \(maxMinorUnits) (got \(money.minorUnits))")
        }
        let currency = try self.currency(money.currency, field: "\(field).currency", allowEmpty: true)
        guard money.minorUnits != 0 else { return nil }
        var checked = Money()
        checked.currency = currency
        checked.minorUnits = money.minorUnits
        return checked
    }

    /// An ISO 4217 code: three letters A–Z (lower case is raised).
    public static func currency(_ text: String, field: String, allowEmpty: Bool = false) throws(ItemStoreError) -> String {
        if text.isEmpty && allowEmpty { return "" }
        let upper = text.uppercased()
        guard upper.utf8.count == 3, upper.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else {
            throw .invalidArgument("\(field) must be an ISO 4217 code of three letters, like USD or EUR (got \(ItemInput.quoted(text)))")
        }
        return upper
    }

    /// Tags: trimmed, none blank, at most `maxTags` of at most `maxTagLength` characters,
    /// unique case-insensitively (a repeat is dropped), in the order given.
    public static func tags(_ tags: [String], field: String = "tags") throws(ItemStoreError) -> [String] {
        var out: [String] = []
        var seen: Set<String> = []
        for (index, raw) in tags.enumerated() {
            let tag = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !tag.isEmpty else { throw .invalidArgument("\(field)[\(index)] must not be empty or blank (got \(ItemInput.quoted(raw)))") }
            _ = try text(tag, field: "\(field)[\(index)]", limit: maxTagLength)
            if seen.insert(tag.lowercased()).inserted { out.append(tag) }
        }
        guard out.count <= maxTags else { throw .invalidArgument("\(field) must hold at most \(maxTags) tags (got \(out.count))") }
        return out
    }

    /// Custom fields: names not blank and unique (case-insensitive), values at most
    /// `maxCustomFieldValueLength` characters, at most `maxCustomFields`.
    public static func customFields(_ fields: [CustomField]) throws(ItemStoreError) -> [CustomField] {
        guard fields.count <= maxCustomFields else {
            throw .invalidArgument("custom_fields must hold at most \(maxCustomFields) fields (got \(fields.count))")
        }
        var seen: Set<String> = []
        var out: [CustomField] = []
        for (index, field) in fields.enumerated() {
            var checked = CustomField()
            checked.name = try name(
                field.name.trimmingCharacters(in: .whitespaces), field: "custom_fields[\(index)].name", limit: maxCustomFieldNameLength)
            checked.value = try text(
                field.value, field: "custom_fields[\(index)].value", limit: maxCustomFieldValueLength, multiline: true)
            guard seen.insert(checked.name.lowercased()).inserted else {
                throw .invalidArgument("custom_fields names \(ItemInput.quoted(checked.name)) more than once")
            }
            out.append(checked)
        }
        return out
    }

    /// A percentage 0…100.
    public static func percent(_ value: Int32, field: String) throws(ItemStoreError) -> Int32 {
        guard (0...100).contains(value) else { throw .invalidArgument("\(field) must be 0…100 (got \(value))") }
        return value
    }
}

/// A day of the Gregorian calendar, parsed from and printed as YYYY-MM-DD.
public struct CalendarDate: Comparable, Hashable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// Parses YYYY-MM-DD strictly: four-digit year 1000…9999, a month and a day that exist.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), year >= 1000,
            (1...12).contains(month), day >= 1, day <= Self.days(inMonth: month, year: year)
        else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// The day (UTC) of a moment in milliseconds since 1970.
    public init(utcMilliseconds: Int64) {
        // Howard Hinnant's civil_from_days.
        let days = Int((utcMilliseconds >= 0 ? utcMilliseconds : utcMilliseconds - 86_399_999) / 86_400_000)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Whole months from `self` to `later` (a month is complete on the same day of the month;
    /// negative when `later` is earlier).
    public func months(until later: CalendarDate) -> Int {
        var months = (later.year - year) * 12 + (later.month - month)
        if later.day < day && months > 0 { months -= 1 } else if later.day > day && months < 0 { months += 1 }
        return months
    }

    public var description: String {
        String(format: "%04d-%02d-%02d", year, month, day)
    }

    public static func < (a: CalendarDate, b: CalendarDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }
}
