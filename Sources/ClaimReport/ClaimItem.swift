import Proto

/// One item of the report with what its photos are: the item as ListItems answered it (its
/// `valuation` filled for the as-of date) and each attached photo in the item's order.
public struct ClaimItem: Sendable {
    /// The item, valued as of the report's date.
    public let item: Item
    /// Its attached photos, in the item's photo order.
    public let photos: [ClaimPhoto]
    /// The name of its coverage category; empty for none.
    public let categoryName: String

    /// An item with its photos.
    public init(item: Item, photos: [ClaimPhoto], categoryName: String) {
        self.item = item
        self.photos = photos
        self.categoryName = categoryName
    }

    /// "Brand Model", either alone, or empty.
    public var brandAndModel: String {
        [item.brand, item.model].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// Quantity as a reply gives it (never 0; 1 for an item made before quantities).
    public var quantity: Int64 { Int64(max(1, item.quantity)) }

    /// The purchase price of all of them (per-unit price × quantity), when it has one.
    public var purchaseTotal: Money? {
        guard let price = item.purchasePrice, price.minorUnits > 0 else { return nil }
        let (total, overflow) = price.minorUnits.multipliedReportingOverflow(by: quantity)
        return Money(currency: price.currency, minorUnits: overflow ? Int64.max : total)
    }
}
