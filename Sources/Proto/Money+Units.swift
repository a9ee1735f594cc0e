import Foundation

/// Money's minor units: how many digits a currency has after its decimal point, and the text
/// people read and type ("$1,299.00", "129.99").
extension Money {
    /// An amount of `minorUnits` in `currency`.
    public init(currency: String, minorUnits: Int64) {
        self.init()
        self.currency = currency
        self.minorUnits = minorUnits
    }

    /// The currencies whose minor unit is not a hundredth (ISO 4217's exponents 0 and 3).
    private static let exponents: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
        "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
    ]

    /// Symbols people recognise; other currencies are written with their code.
    private static let symbols: [String: String] = [
        "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CAD": "CA$", "AUD": "A$", "NZD": "NZ$", "INR": "₹",
        "CNY": "CN¥", "KRW": "₩", "CHF": "CHF ", "SEK": "SEK ", "NOK": "NOK ", "DKK": "DKK ",
    ]

    /// Digits after the decimal point in `currency` (2 unless ISO 4217 says otherwise).
    public static func exponent(of currency: String) -> Int { exponents[currency] ?? 2 }

    /// What one whole unit of `currency` is in minor units (100 for USD, 1 for JPY).
    public static func scale(of currency: String) -> Int64 {
        var scale: Int64 = 1
        for _ in 0..<exponent(of: currency) { scale *= 10 }
        return scale
    }

    /// The amount as a plain decimal ("1299.00"), for CSV and JSON.
    public var decimalText: String {
        let exponent = Self.exponent(of: currency)
        let scale = Self.scale(of: currency)
        let sign = minorUnits < 0 ? "-" : ""
        let magnitude = minorUnits.magnitude
        let whole = magnitude / UInt64(scale)
        guard exponent > 0 else { return sign + String(whole) }
        let fraction = String(magnitude % UInt64(scale))
        return sign + String(whole) + "." + String(repeating: "0", count: exponent - fraction.count) + fraction
    }

    /// The amount as people read it, grouped by thousands, with the currency's symbol or code
    /// ("$1,299.00", "€15.50", "BRL 12.00"); `currency` stands in for an empty one.
    public func formatted(defaultCurrency: String = "USD") -> String {
        let code = currency.isEmpty ? defaultCurrency : currency
        var copy = self
        copy.currency = code
        let plain = copy.decimalText
        let negative = plain.hasPrefix("-")
        let digits = negative ? String(plain.dropFirst()) : plain
        let parts = digits.split(separator: ".", maxSplits: 1)
        var whole = String(parts[0])
        var grouped = ""
        while whole.count > 3 {
            grouped = "," + whole.suffix(3) + grouped
            whole = String(whole.dropLast(3))
        }
        grouped = whole + grouped
        if parts.count > 1 { grouped += "." + parts[1] }
        return (negative ? "-" : "") + (Self.symbols[code] ?? code + " ") + grouped
    }

    /// Parses an amount typed in whole units ("129.99", "1,299", "15") into minor units of
    /// `currency`; nil when it is not a number, is negative, or has more decimals than the
    /// currency.
    public static func parse(_ text: String, currency: String) -> Money? {
        let cleaned = text.replacingOccurrences(of: ",", with: "").replacingOccurrences(of: "_", with: "")
        let parts = cleaned.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let exponent = exponent(of: currency)
        guard let wholeText = parts.first, !wholeText.isEmpty, wholeText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            wholeText.count <= 15, let whole = Int64(wholeText)
        else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let text = parts[1]
            guard !text.isEmpty, text.count <= exponent, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            fraction = Int64(text + String(repeating: "0", count: exponent - text.count)) ?? 0
        }
        return Money(currency: currency, minorUnits: whole * scale(of: currency) + fraction)
    }
}
