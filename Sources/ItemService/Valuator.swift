import Proto

/// What an item is worth on a date (docs/protocol.md §10, "Valuation"): its replacement cost (RCV) from the
/// first value it has (replacement value, purchase price, value_in_dollars) times its quantity,
/// and its actual cash value (ACV) after its category's depreciation.
public struct Valuator: Sendable {
    public let policy: Policy
    public let asOf: CalendarDate
    let categories: [String: Category]

    public init(policy: Policy, categories: [Category], asOf: CalendarDate) {
        self.policy = policy
        self.categories = Dictionary(categories.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        self.asOf = asOf
    }

    /// `item`'s valuation; amounts in the basis's currency, '' written as the policy's.
    public func value(_ item: Item) -> ItemValuation {
        var valuation = ItemValuation()
        valuation.asOf = asOf.description
        let quantity = Int64(max(item.quantity, 1))
        let unit: Money
        if let money = item.replacementValue, money.minorUnits > 0 {
            valuation.basis = .replacementValue
            unit = money
        } else if let money = item.purchasePrice, money.minorUnits > 0 {
            valuation.basis = .purchasePrice
            unit = money
        } else if item.valueInDollars > 0 {
            valuation.basis = .valueInDollars
            unit = Money(currency: policy.currency, minorUnits: item.valueInDollars * Money.scale(of: policy.currency))
        } else {
            valuation.basis = .none
            unit = Money(currency: policy.currency, minorUnits: 0)
        }
        let currency = unit.currency.isEmpty ? policy.currency : unit.currency
        let (rcv, overflowed) = unit.minorUnits.multipliedReportingOverflow(by: quantity)
        let replacement = overflowed ? Int64.max : rcv
        valuation.replacementCost = Money(currency: currency, minorUnits: replacement)
        if let date = CalendarDate(item.purchaseDate) {
            valuation.ageMonths = Int32(clamping: max(0, date.months(until: asOf)))
        } else {
            valuation.ageMonths = -1
        }
        let remaining = remainingShare(item, ageMonths: valuation.ageMonths)
        let acv = remaining.numerator == remaining.denominator
            ? replacement
            : Int64((Double(replacement) * Double(remaining.numerator) / Double(remaining.denominator)).rounded())
        valuation.actualCashValue = Money(currency: currency, minorUnits: acv)
        valuation.remainingPercent = replacement == 0 ? 100 : Int32(clamping: (acv * 100 + replacement / 2) / replacement)
        return valuation
    }

    /// The share of the replacement cost left after depreciation, as a fraction: straight line
    /// over the useful life in months, never below the floor; whole when the age is unknown or
    /// the category keeps value.
    func remainingShare(_ item: Item, ageMonths: Int32) -> (numerator: Int64, denominator: Int64) {
        guard ageMonths >= 0, let category = categories[item.categoryKey], category.depreciation == .straightLine,
            category.usefulLifeYears > 0
        else { return (1, 1) }
        let life = Int64(category.usefulLifeYears) * 12
        let left = max(life - Int64(ageMonths), 0)
        // left / life against floor / 100, over a common denominator.
        let linear = left * 100, floor = Int64(category.floorPercent) * life
        return (max(linear, floor), life * 100)
    }
}
