import Proto

/// `homepwner report value` for people: the totals, then by location, by category (with the
/// limits) and by tag, then the warnings near limits.
public enum ValuationText {
    /// The reply as tables; amounts without a currency are in the reply's.
    public static func render(_ valuation: GetValuationResponse, scope: String? = nil) -> String {
        let currency = valuation.currency.isEmpty ? "USD" : valuation.currency
        func money(_ value: Money?) -> String { (value ?? Money(currency: currency, minorUnits: 0)).formatted(defaultCurrency: currency) }
        let total = valuation.total ?? ValuationTotals()
        var out = "Valuation as of \(valuation.asOf) in \(currency)\(scope.map { ", " + $0 } ?? "")\n\n"
        var totals = TextTable(["", "items", "quantity", "purchase price", "replacement cost (RCV)", "actual cash value (ACV)"])
        totals.add([
            "Total", ClaimText.count(total.itemCount), ClaimText.count(total.quantity), money(total.purchasePrice), money(total.replacementCost),
            money(total.actualCashValue),
        ])
        out += totals.text
        if total.unvaluedCount > 0 { out += "\(ClaimText.plural(total.unvaluedCount, "item")) with no value at all.\n" }
        if total.otherCurrencyCount > 0 {
            out += "\(ClaimText.plural(total.otherCurrencyCount, "item")) valued in another currency than \(currency): counted, not summed.\n"
        }
        func groups(_ title: String, _ noun: String, _ list: [ValuationGroup], empty: String, limits: Bool = false) {
            guard !list.isEmpty else { return }
            out += "\n\(title)\n"
            var table = TextTable([noun, "items", "RCV", "ACV"] + (limits ? ["limit", "of limit"] : []))
            for group in list {
                let totals = group.totals ?? ValuationTotals()
                var row = [group.name.isEmpty ? empty : group.name, ClaimText.count(totals.itemCount), money(totals.replacementCost), money(totals.actualCashValue)]
                if limits {
                    if let limit = group.limit, limit.minorUnits > 0 {
                        row += [money(limit), "\(Int(Double(totals.replacementCost?.minorUnits ?? 0) * 100 / Double(limit.minorUnits))) %"]
                    } else {
                        row += ["", ""]
                    }
                }
                table.add(row)
            }
            out += table.text
        }
        groups("By location (each with everything inside it)", "location", valuation.byLocation, empty: "No location")
        groups("By category", "category", valuation.byCategory, empty: "No category", limits: true)
        groups("By tag", "tag", valuation.byTag, empty: "")
        out += "\n"
        if valuation.warnings.isEmpty {
            out += "No total is near its limit.\n"
        } else {
            out += "Warnings:\n" + valuation.warnings.map { "  " + $0.message + "\n" }.joined()
        }
        return out
    }
}
