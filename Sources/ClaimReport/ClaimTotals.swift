import Proto

/// The sums of a run of items (a location's section): counts, and the amounts per currency,
/// since amounts in different currencies are never added together.
public struct ClaimTotals: Sendable, Hashable {
    /// The sums of one currency.
    public struct Amounts: Sendable, Hashable {
        /// Purchase prices × quantities of the items that have one.
        public var purchase: Int64 = 0
        /// Replacement cost (RCV).
        public var replacement: Int64 = 0
        /// Actual cash value (ACV).
        public var actualCash: Int64 = 0
    }

    /// Items added.
    public private(set) var itemCount: Int64 = 0
    /// The sum of their quantities.
    public private(set) var quantity: Int64 = 0
    /// Photos attached to them.
    public private(set) var photoCount: Int64 = 0
    /// The sums by currency code (the policy's for amounts without one).
    public private(set) var byCurrency: [String: Amounts] = [:]

    /// No items yet.
    public init() {}

    /// Adds `item`'s figures; amounts without a currency count as `defaultCurrency`.
    public mutating func add(_ item: ClaimItem, defaultCurrency: String) {
        itemCount += 1
        quantity += item.quantity
        photoCount += Int64(item.photos.count)
        func add(_ money: Money?, _ keyPath: WritableKeyPath<Amounts, Int64>) {
            guard let money, money.minorUnits != 0 else { return }
            let code = money.currency.isEmpty ? defaultCurrency : money.currency
            byCurrency[code, default: Amounts()][keyPath: keyPath] &+= money.minorUnits
        }
        add(item.purchaseTotal, \.purchase)
        add(item.item.valuation?.replacementCost, \.replacement)
        add(item.item.valuation?.actualCashValue, \.actualCash)
    }

    /// The currencies summed, the policy's first, then by code.
    public func currencies(first: String) -> [String] {
        byCurrency.keys.sorted { ($0 == first ? 0 : 1, $0) < ($1 == first ? 0 : 1, $1) }
    }

    /// The sums in `currency` as Money (purchase, RCV, ACV).
    public func amounts(in currency: String) -> (purchase: Money, replacement: Money, actualCash: Money) {
        let sums = byCurrency[currency] ?? Amounts()
        return (
            Money(currency: currency, minorUnits: sums.purchase), Money(currency: currency, minorUnits: sums.replacement),
            Money(currency: currency, minorUnits: sums.actualCash)
        )
    }
}
