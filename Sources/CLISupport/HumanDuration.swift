/// Durations as people read them ("3 s", "2 min") and type them ("90s", "10m", "7d").
public enum HumanDuration {
    /// Whole units, rounded down: "250 ms" under a second, then "3 s", "2 min", "5 h", and "3 d"
    /// from two days on (a day and a half reads better as "36 h"). Negative counts as 0.
    public static func text(milliseconds: Int64) -> String {
        let ms = max(0, milliseconds)
        switch ms {
        case ..<1000: return "\(ms) ms"
        case ..<60_000: return "\(ms / 1000) s"
        case ..<3_600_000: return "\(ms / 60_000) min"
        case ..<172_800_000: return "\(ms / 3_600_000) h"
        default: return "\(ms / 86_400_000) d"
        }
    }

    /// The milliseconds of a number followed by a unit: `ms`, `s`, `m` or `min`, `h`, `d`
    /// ("500ms", "90s", "10m", "2h", "7d"); nil for anything else (no unit, a fraction, a sign,
    /// or more than a year).
    public static func milliseconds(_ typed: String) -> Int64? {
        let digits = typed.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let count = Int64(digits) else { return nil }
        let units: [String: Int64] = ["ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000]
        guard let unit = units[String(typed.dropFirst(digits.count))] else { return nil }
        let (total, overflow) = count.multipliedReportingOverflow(by: unit)
        return !overflow && total <= 366 * 86_400_000 ? total : nil
    }
}
