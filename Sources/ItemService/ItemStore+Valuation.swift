import Foundation
import Proto
import SQLite

/// Valuation as of a date and claim readiness: one pass over the items in scope, row by row
/// (memory does not grow with the item count). They run on any connection to items.db
/// (`ItemReads`): the service runs them on a read-only one (`ItemReader`), so a pass over
/// 100,000 items never holds up the store's writes and reads.
extension ItemReads {
    /// A valuator for `asOf` (YYYY-MM-DD, "today" or '' for today, UTC).
    func valuator(asOf text: String, now: Int64 = ItemStore.wallClockMilliseconds(), categories: [Category]? = nil) throws -> Valuator {
        let date: CalendarDate
        if text.isEmpty || text == "today" {
            date = CalendarDate(utcMilliseconds: now)
        } else {
            guard let parsed = CalendarDate(text) else {
                throw ItemStoreError.invalidArgument("as_of must be a date as YYYY-MM-DD or \"today\" (got \(ItemInput.quoted(text)))")
            }
            date = parsed
        }
        // Their rules only: the item counts would cost a pass over the items.
        return Valuator(policy: try policy(), categories: try categories ?? self.categories(counted: false), asOf: date)
    }

    /// Totals of everything (or a location's subtree) as of a date, per location, category and
    /// tag, with warnings near limits.
    func valuation(_ request: GetValuationRequest, now: Int64 = ItemStore.wallClockMilliseconds()) throws -> GetValuationResponse {
        let categories = try self.categories(counted: false)
        let valuator = try valuator(asOf: request.asOf, now: now, categories: categories)
        let tree = try locationTree()
        let scope = try scopeKeys(request.locationKey, tree: tree)
        let currency = valuator.policy.currency
        var total = Totals(currency: currency)
        var byLocation: [String: Totals] = [:]
        var byCategory: [String: Totals] = [:]
        var byTag: [String: (name: String, totals: Totals)] = [:]
        try forEachItem(in: scope) { item in
            let value = valuator.value(item)
            let inCurrency = value.replacementCost?.currency == currency
            total.add(item, value, inCurrency: inCurrency)
            for key in item.locationKey.isEmpty ? [""] : tree.ancestors(of: item.locationKey) {
                byLocation[key, default: Totals(currency: currency)].add(item, value, inCurrency: inCurrency)
            }
            byCategory[item.categoryKey, default: Totals(currency: currency)].add(item, value, inCurrency: inCurrency)
            for tag in item.tags {
                byTag[tag.lowercased(), default: (tag, Totals(currency: currency))].totals.add(item, value, inCurrency: inCurrency)
            }
        }
        var response = GetValuationResponse()
        response.asOf = valuator.asOf.description
        response.currency = currency
        response.total = total.message
        let locations = scope.map { keys in tree.ordered.filter { keys.contains($0.key) } } ?? tree.ordered
        for location in locations {
            response.byLocation.append(ItemStore.group(location.key, location.path, byLocation[location.key] ?? Totals(currency: currency)))
        }
        if scope == nil, let unplaced = byLocation[""] { response.byLocation.append(ItemStore.group("", "No location", unplaced)) }
        let warn = Int64(valuator.policy.warnAtPercent == 0 ? 80 : valuator.policy.warnAtPercent)
        for category in categories {
            guard let totals = byCategory[category.key] else { continue }
            var group = ItemStore.group(category.key, category.name, totals)
            group.limit = category.limit
            response.byCategory.append(group)
            if let warning = ItemStore.limitWarning(
                scope: "category", key: category.key, name: category.name, total: totals.replacement, limit: category.limit,
                currency: currency, warnAt: warn)
            {
                response.warnings.append(warning)
            }
        }
        if let none = byCategory[""] { response.byCategory.append(ItemStore.group("", "No category", none)) }
        for (_, tag) in byTag.sorted(by: { $0.key < $1.key }) {
            response.byTag.append(ItemStore.group(tag.name, tag.name, tag.totals))
        }
        if scope == nil, let warning = ItemStore.limitWarning(
            scope: "contents", key: "", name: "Contents", total: total.replacement, limit: valuator.policy.contentsLimit,
            currency: currency, warnAt: warn)
        {
            response.warnings.append(warning)
        }
        return response
    }

    /// Which items lack which evidence, overall and per location subtree, with scores.
    func readiness(_ request: GetReadinessRequest) throws -> GetReadinessResponse {
        let tree = try locationTree()
        let scope = try scopeKeys(request.locationKey, tree: tree)
        var overall = Readiness()
        var byLocation: [String: Readiness] = [:]
        try forEachItem(in: scope) { item in
            let have = ItemEvidence.of(item)
            overall.add(item, have)
            for key in item.locationKey.isEmpty ? [""] : tree.ancestors(of: item.locationKey) {
                byLocation[key, default: Readiness()].add(item, have)
            }
        }
        var response = GetReadinessResponse()
        response.overall = overall.message(key: "", name: "Everything")
        let locations = scope.map { keys in tree.ordered.filter { keys.contains($0.key) } } ?? tree.ordered
        for location in locations {
            response.locations.append((byLocation[location.key] ?? Readiness()).message(key: location.key, name: location.path))
        }
        if scope == nil, let unplaced = byLocation[""] { response.locations.append(unplaced.message(key: "", name: "No location")) }
        return response
    }

    // MARK: Helpers

    /// The keys of `locationKey`'s subtree, or nil for everything ('').
    fileprivate func scopeKeys(_ locationKey: String, tree: LocationTree) throws -> Set<String>? {
        guard !locationKey.isEmpty else { return nil }
        let key = try ItemInput.key(locationKey, field: "location_key")
        let keys = tree.subtreeKeys(of: key)
        guard !keys.isEmpty else { throw ItemStoreError.notFound("location_key: no location with key \(key); see ListLocations") }
        return keys
    }

    /// Calls `body` with each item in `scope` (nil: every item), one row at a time.
    func forEachItem(in scope: Set<String>?, _ body: (Item) throws -> Void) throws {
        var sql = "SELECT \(ItemStore.columns) FROM items"
        var params: [SQLiteValue] = []
        if let scope {
            sql += " WHERE location_key IN (\(scope.map { _ in "?" }.joined(separator: ", ")))"
            params = scope.sorted().map { .text($0) }
        }
        sql += " ORDER BY id"
        let statement = try db.prepare(sql)
        try statement.bind(params)
        try statement.forEachRow { try body(ItemStore.item(from: $0)) }
    }
}

extension ItemStore {
    /// The most items a readiness group lists as gaps.
    public static let maxGaps = 20

    /// The item with `key`, valued as of `asOf` when it is not ''.
    public func get(key: String, asOf: String) throws -> Item {
        var item = try get(key: key)
        if !asOf.isEmpty { item.valuation = try valuator(asOf: asOf).value(item) }
        return item
    }

    fileprivate static func group(_ key: String, _ name: String, _ totals: Totals) -> ValuationGroup {
        var group = ValuationGroup()
        group.key = key
        group.name = name
        group.totals = totals.message
        return group
    }

    fileprivate static func limitWarning(
        scope: String, key: String, name: String, total: Int64, limit: Money?, currency: String, warnAt: Int64
    ) -> LimitWarning? {
        guard let limit, limit.minorUnits > 0, limit.currency.isEmpty || limit.currency == currency else { return nil }
        let percent = total >= Int64.max / 100 ? Int64(Int32.max) : total * 100 / limit.minorUnits
        guard percent >= warnAt else { return nil }
        var warning = LimitWarning()
        warning.scope = scope
        warning.key = key
        warning.name = name
        warning.total = Money(currency: currency, minorUnits: total)
        warning.limit = Money(currency: currency, minorUnits: limit.minorUnits)
        warning.percent = Int32(clamping: percent)
        let totalText = Money(currency: currency, minorUnits: total).formatted()
        let limitText = Money(currency: currency, minorUnits: limit.minorUnits).formatted()
        warning.message =
            percent >= 100
            ? "\(name): \(totalText) is over its \(limitText) limit (\(percent) %)"
            : "\(name): \(totalText) of its \(limitText) limit (\(percent) %)"
        return warning
    }

    /// Milliseconds since 1970, for "today" when no clock is passed.
    public static func wallClockMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// Valuation totals being summed.
private struct Totals {
    let currency: String
    var items: Int64 = 0
    var quantity: Int64 = 0
    var replacement: Int64 = 0
    var actual: Int64 = 0
    var purchase: Int64 = 0
    var unvalued: Int64 = 0
    var otherCurrency: Int64 = 0

    init(currency: String) { self.currency = currency }

    mutating func add(_ item: Item, _ value: ItemValuation, inCurrency: Bool) {
        items += 1
        quantity += Int64(max(item.quantity, 1))
        if value.basis == .none {
            unvalued += 1
        } else if !inCurrency {
            otherCurrency += 1
        } else {
            replacement = replacement.addingClamped(value.replacementCost?.minorUnits ?? 0)
            actual = actual.addingClamped(value.actualCashValue?.minorUnits ?? 0)
        }
        if let price = item.purchasePrice, price.minorUnits > 0, price.currency.isEmpty || price.currency == currency {
            purchase = purchase.addingClamped(price.minorUnits.multipliedClamped(Int64(max(item.quantity, 1))))
        }
    }

    var message: ValuationTotals {
        var totals = ValuationTotals()
        totals.itemCount = items
        totals.quantity = quantity
        totals.replacementCost = Money(currency: currency, minorUnits: replacement)
        totals.actualCashValue = Money(currency: currency, minorUnits: actual)
        totals.purchasePrice = Money(currency: currency, minorUnits: purchase)
        totals.unvaluedCount = unvalued
        totals.otherCurrencyCount = otherCurrency
        return totals
    }
}

/// Readiness being counted for one group.
private struct Readiness {
    var items: Int64 = 0
    var missing = [Int64](repeating: 0, count: ItemEvidence.kinds.count)
    /// The most incomplete items so far, at most `ItemStore.maxGaps`.
    var gaps: [ItemGap] = []

    mutating func add(_ item: Item, _ have: ItemEvidence) {
        items += 1
        let lacking = have.missing
        for evidence in lacking { missing[Int(evidence.rawValue) - 1] += 1 }
        guard !lacking.isEmpty else { return }
        if gaps.count == ItemStore.maxGaps, let last = gaps.last, last.missing.count >= lacking.count { return }
        var gap = ItemGap()
        gap.itemKey = item.key
        gap.name = item.name
        gap.missing = lacking
        let index = gaps.firstIndex { $0.missing.count < lacking.count } ?? gaps.endIndex
        gaps.insert(gap, at: index)
        if gaps.count > ItemStore.maxGaps { gaps.removeLast() }
    }

    func message(key: String, name: String) -> ReadinessGroup {
        var group = ReadinessGroup()
        group.key = key
        group.name = name
        group.itemCount = items
        group.missing = ItemEvidence.kinds.map { evidence in
            var count = EvidenceCount()
            count.evidence = evidence
            count.missing = missing[Int(evidence.rawValue) - 1]
            return count
        }
        let pairs = items * Int64(ItemEvidence.kinds.count)
        let lacking = missing.reduce(0, +)
        group.scorePercent = pairs == 0 ? 100 : Int32((pairs - lacking) * 100 / pairs)
        group.gaps = gaps
        return group
    }
}

extension Int64 {
    fileprivate func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? Int64.max : sum
    }

    fileprivate func multipliedClamped(_ other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? Int64.max : product
    }
}
