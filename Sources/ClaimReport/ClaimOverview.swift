import Foundation
import Proto

/// Everything a report knows before its first item: the scope, the policy and the cover,
/// the valuation and readiness of the scope, and the sections to write in order. Its size
/// grows with the number of locations and categories, never with the items.
public struct ClaimOverview: Sendable {
    /// The location reported on; nil for everything.
    public let location: Location?
    /// The policy (its currency is every total's).
    public let policy: Policy
    /// The cover's fields.
    public let cover: ClaimCover
    /// GetValuation of the scope on the as-of date.
    public let valuation: GetValuationResponse
    /// GetReadiness of the scope.
    public let readiness: GetReadinessResponse
    /// The locations with items directly in them, in ListLocations order (depth first), then
    /// "No location" when the scope is everything and some items are in none.
    public let sections: [ClaimSection]
    /// Category names by key.
    public let categoryNames: [String: String]
    /// Items in the scope.
    public let itemCount: Int64
    /// Photos attached to them (each attachment counted).
    public let photoCount: Int64
    /// When the report was made.
    public let madeAt: Date
    /// The inventory history's head when the report began (docs/protocol.md §17): an entry
    /// written after it, a change made after the report was handed over, shows against it.
    /// Nil from an item service without a history.
    public let historyHead: HistoryHead?

    /// The head in words: "entry 42, sha256:…" ("no history kept" when there is none).
    public var historyHeadText: String {
        guard let historyHead, historyHead.seq > 0 else { return "no history kept" }
        return "entry \(historyHead.seq), \(historyHead.hash)"
    }

    /// The scope in words: the location's path, or "Everything".
    public var scopeName: String { location?.path ?? "Everything" }

    /// The as-of date the valuation used (YYYY-MM-DD).
    public var asOf: String { valuation.asOf }

    /// The policy's currency, which amounts without one are in.
    public var currency: String { policy.currency.isEmpty ? (valuation.currency.isEmpty ? "USD" : valuation.currency) : policy.currency }

    /// `money` as people read it, in its own currency or the policy's; "—" for none.
    public func text(_ money: Money?) -> String {
        guard let money else { return "—" }
        return money.formatted(defaultCurrency: currency)
    }

    /// Builds an overview from its parts (tests and the gatherer).
    public init(
        location: Location?, policy: Policy, cover: ClaimCover, valuation: GetValuationResponse, readiness: GetReadinessResponse,
        sections: [ClaimSection], categoryNames: [String: String], itemCount: Int64, photoCount: Int64, madeAt: Date,
        historyHead: HistoryHead? = nil
    ) {
        self.location = location
        self.policy = policy
        self.cover = cover
        self.valuation = valuation
        self.readiness = readiness
        self.sections = sections
        self.categoryNames = categoryNames
        self.itemCount = itemCount
        self.photoCount = photoCount
        self.madeAt = madeAt
        self.historyHead = historyHead
    }
}
