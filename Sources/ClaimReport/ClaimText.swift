import Foundation
import Proto

/// How the report words dates, ages and evidence.
public enum ClaimText {
    /// "2 y 3 mo", "5 mo", "new" for under a month; "" when the purchase date is unknown (−1).
    public static func age(months: Int32) -> String {
        guard months >= 0 else { return "" }
        if months == 0 { return "under a month" }
        let years = months / 12, rest = months % 12
        switch (years, rest) {
        case (0, _): return "\(rest) mo"
        case (_, 0): return "\(years) y"
        default: return "\(years) y \(rest) mo"
        }
    }

    /// "2026-11-29 16:27:10 UTC".
    public static func utc(milliseconds: Int64) -> String {
        utc(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// "2026-11-29 16:27:10 UTC".
    public static func utc(_ date: Date) -> String {
        formatter("yyyy-MM-dd HH:mm:ss 'UTC'").string(from: date)
    }

    /// When a photo was taken, from the image service's `taken_at` (ISO 8601, the camera's
    /// local time, its UTC offset when the camera recorded one): "2024-05-07 09:33:04 +08:00",
    /// "2024-05-07 09:33:04 (no time zone)"; text of another form as it is; "" for "".
    public static func taken(_ takenAt: String) -> String {
        let bytes = Array(takenAt.utf8)
        guard bytes.count == 19 || bytes.count == 25, bytes[10] == UInt8(ascii: "T") else { return takenAt }
        let local = String(decoding: bytes[0..<10], as: UTF8.self) + " " + String(decoding: bytes[11..<19], as: UTF8.self)
        return bytes.count == 25 ? local + " " + String(decoding: bytes[19...], as: UTF8.self) : local + " (no time zone)"
    }

    /// "2026-11-29" (UTC).
    public static func day(_ date: Date) -> String {
        formatter("yyyy-MM-dd").string(from: date)
    }

    private static func formatter(_ format: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = format
        return formatter
    }

    /// What a value's basis is, in words ("replacement value").
    public static func basis(_ basis: ValueBasis) -> String {
        switch basis {
        case .replacementValue: "replacement value"
        case .purchasePrice: "purchase price"
        case .valueInDollars: "recorded value"
        default: "not valued"
        }
    }

    /// The evidence a claim wants, as a column or a gap names it ("receipt").
    public static func evidence(_ evidence: Evidence) -> String {
        switch evidence {
        case .photo: "photo"
        case .receipt: "receipt"
        case .serial: "serial"
        case .value: "value"
        case .purchaseDate: "purchase date"
        default: "evidence \(evidence.rawValue)"
        }
    }

    /// "1,234" for a count.
    public static func count(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { grouped = "," + grouped }
            grouped = String(digit) + grouped
        }
        return (value < 0 ? "-" : "") + grouped
    }

    /// "3 items", "1 item".
    public static func plural(_ value: Int64, _ noun: String) -> String {
        "\(count(value)) \(noun)\(value == 1 ? "" : "s")"
    }

    /// "1.2 MB", "34 KB", "512 bytes".
    public static func size(_ bytes: Int64) -> String {
        if bytes >= 1 << 20 { return String(format: "%.1f MB", Double(bytes) / Double(1 << 20)) }
        if bytes >= 1 << 10 { return "\(bytes >> 10) KB" }
        return "\(bytes) bytes"
    }
}
