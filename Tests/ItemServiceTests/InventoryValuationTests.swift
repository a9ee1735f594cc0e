import Foundation
import Proto
import SQLite
import Testing

@testable import ItemService

/// Full-text search, valuation as of a date and claim readiness, on a real SQLite file.
@Suite struct InventoryValuationTests {
    @Test func searchFindsWordPrefixesInEveryClaimFieldAndTheLocationPathAcrossScripts() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let garage = try store.createLocation(locationRequest("Garage"), now: 1)
        var drill = createRequest("Cordless drill", serial: "DW-778")
        drill.brand = "DeWalt"
        drill.model = "DCD777"
        drill.locationKey = garage.key
        _ = try store.create(drill, now: 2)
        var fridge = createRequest("Холодильник")
        fridge.notes = "Bought with the kitchen; the drill hangs beside it."
        _ = try store.create(fridge, now: 3)
        var cjk = createRequest("東京の冷蔵庫")
        cjk.tags = ["Élégant"]
        _ = try store.create(cjk, now: 4)

        func names(_ text: String) throws -> [String] {
            var request = ListItemsRequest()
            request.search = text
            return try store.list(request).items.map(\.name)
        }
        #expect(try names("dew dcd") == ["Cordless drill"])
        #expect(try names("dw-778") == ["Cordless drill"])
        #expect(try names("gar") == ["Cordless drill"])
        #expect(try names("холод") == ["Холодильник"])
        #expect(try names("東京") == ["東京の冷蔵庫"])
        #expect(try names("elegant") == ["東京の冷蔵庫"])
        // Ranked: the item named a drill before the one whose notes mention one.
        #expect(try names("drill") == ["Cordless drill", "Холодильник"])
        #expect(try names("drill nothing").isEmpty)

        // A renamed location's items are found by its new name only.
        var rename = UpdateLocationRequest()
        rename.key = garage.key
        rename.updateMask = ["name"]
        rename.name = "Workshop"
        _ = try store.updateLocation(rename, now: 5)
        #expect(try names("workshop") == ["Cordless drill"])
        #expect(try names("garage").isEmpty)

        var punctuation = ListItemsRequest()
        punctuation.search = " -- ** "
        #expect(storeError { try store.list(punctuation) }?.rpcStatus == .invalidArgument)
        var relevanceAlone = ListItemsRequest()
        relevanceAlone.sort = .relevance
        #expect(storeError { try store.list(relevanceAlone) }?.rpcStatus == .invalidArgument)
    }

    @Test func searchPagesByRelevanceWithoutRepeatsAndRefusesATokenOfAnotherFilter() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        for index in 0..<11 {
            var request = createRequest("Lamp \(index)")
            request.notes = String(repeating: "lamp shade ", count: index % 4)
            _ = try store.create(request, now: Int64(index))
        }
        _ = try store.create(createRequest("Sofa"), now: 20)
        var request = ListItemsRequest()
        request.search = "lamp"
        request.pageSize = 4
        var seen: [String] = []
        repeat {
            let page = try store.list(request)
            #expect(page.totalCount == 11)
            seen += page.items.map(\.name)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        #expect(seen.count == 11 && Set(seen).count == 11)

        request.pageToken = try store.list({ var r = request; r.pageToken = ""; return r }()).nextPageToken
        request.search = "sofa"
        #expect(storeError { try store.list(request) }?.description.contains("another sort, direction, query or filter") == true)
    }

    /// A search with no other filter is ranked by the text index alone (rankedTextPage); with a
    /// filter, by the join. Both give the same pages in the same order, with ties (equal ranks)
    /// broken by id, in either direction.
    @Test func aSearchAloneRanksAndPagesAsTheJoinDoes() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let home = try store.createLocation(locationRequest("Home", kind: .home), now: 1)
        for index in 0..<40 {
            var request = createRequest(index % 3 == 0 ? "Lamp" : "Lamp \(index)")
            request.notes = String(repeating: "lamp shade ", count: index % 5)
            request.locationKey = home.key
            _ = try store.create(request, now: Int64(index))
        }
        _ = try store.create(createRequest("Sofa"), now: 50)
        func pages(_ base: ListItemsRequest) throws -> (keys: [String], totals: Set<Int64>, ranked: Set<Bool>) {
            var request = base
            var keys: [String] = [], totals: Set<Int64> = [], ranked: Set<Bool> = []
            repeat {
                let page = try store.list(request)
                keys += page.items.map(\.key)
                totals.insert(page.totalCount)
                ranked.insert(page.ranked)
                request.pageToken = page.nextPageToken
            } while !request.pageToken.isEmpty
            return (keys, totals, ranked)
        }
        for descending in [false, true] {
            var alone = ListItemsRequest()
            alone.search = "lamp"
            alone.pageSize = 7
            alone.descending = descending
            var filtered = alone
            filtered.locationKey = home.key
            let one = try pages(alone), joined = try pages(filtered)
            #expect(one.keys.count == 40 && Set(one.keys).count == 40)
            #expect(one.keys == joined.keys)
            #expect(one.totals == [40] && joined.totals == [40])
            #expect(one.ranked == [true] && joined.ranked == [true])
        }
        // The most relevant first: the items whose notes say "lamp" most often.
        var first = ListItemsRequest()
        first.search = "lamp"
        first.pageSize = 1
        #expect(try store.list(first).items.first?.notes.hasPrefix(String(repeating: "lamp shade ", count: 4)) == true)
    }

    @Test func aSearchMatchingTooManyToRankComesNewestFirstAndSaysSo() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let count = Int(ItemStore.maxRankedMatches) + 50
        // One transaction for them all: the test is about reads.
        try store.beginBatch()
        for index in 0..<count { _ = try store.create(createRequest("Lamp \(index)", serial: index == 7 ? "RARE-1" : ""), now: Int64(index)) }
        try store.commitBatch()
        var request = ListItemsRequest()
        request.search = "lamp"
        request.pageSize = 1000
        var names: [String] = []
        repeat {
            let page = try store.list(request)
            #expect(!page.ranked && page.totalCount == Int64(count))
            names += page.items.map(\.name)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        #expect(names.count == count && Set(names).count == count)
        #expect(names.first == "Lamp \(count - 1)" && names.last == "Lamp 0")
        request.descending = true
        #expect(try store.list(request).items.first?.name == "Lamp 0")
        request.search = "lamp rare"
        request.descending = false
        let rare = try store.list(request)
        #expect(rare.ranked && rare.items.map(\.name) == ["Lamp 7"])
    }

    @Test func valuationAsOfADateDepreciatesByCategoryAndTotalsPerLocationCategoryAndTag() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let home = try store.createLocation(locationRequest("Home", kind: .home), now: 1)
        let kitchen = try store.createLocation(locationRequest("Kitchen", parent: home.key), now: 1)
        let bedroom = try store.createLocation(locationRequest("Bedroom", parent: home.key), now: 1)
        let electronics = try store.createCategory(categoryRequest("Electronics", years: 5, floor: 20), now: 1)
        let jewellery = try store.createCategory(categoryRequest("Jewellery", limit: 1_000_000), now: 1)
        var policy = UpdatePolicyRequest()
        policy.updateMask = ["contents_limit", "policyholder"]
        policy.policy = { var p = Policy(); p.contentsLimit = Money(currency: "USD", minorUnits: 1_400_000); p.policyholder = "A. Owner"; return p }()
        #expect(try store.updatePolicy(policy, now: 1).version == 1)

        var tv = createRequest("TV")
        tv.replacementValue = Money(currency: "USD", minorUnits: 100_000)
        tv.quantity = 2
        tv.purchaseDate = "2023-01-15"
        tv.categoryKey = electronics.key
        tv.locationKey = kitchen.key
        tv.tags = ["screens"]
        let tvItem = try store.create(tv, now: 2).item
        var ring = createRequest("Ring")
        ring.replacementValue = Money(currency: "", minorUnits: 900_000)
        ring.purchaseDate = "2010-01-01"
        ring.categoryKey = jewellery.key
        ring.locationKey = bedroom.key
        _ = try store.create(ring, now: 2)
        var laptop = createRequest("Old laptop")
        laptop.purchasePrice = Money(currency: "USD", minorUnits: 50_000)
        laptop.purchaseDate = "2015-01-01"
        laptop.categoryKey = electronics.key
        laptop.locationKey = kitchen.key
        laptop.tags = ["Screens", "work"]
        _ = try store.create(laptop, now: 2)
        _ = try store.create(createRequest("Legacy", value: 30), now: 2)
        var euro = createRequest("Espresso machine")
        euro.replacementValue = Money(currency: "EUR", minorUnits: 10_000)
        _ = try store.create(euro, now: 2)
        _ = try store.create(createRequest("Nothing known"), now: 2)

        // 30 months into a 60-month life: half left.
        let valued = try store.get(key: tvItem.key, asOf: "2025-07-15").valuation
        #expect(valued?.basis == .replacementValue && valued?.ageMonths == 30 && valued?.remainingPercent == 50)
        #expect(valued?.replacementCost == Money(currency: "USD", minorUnits: 200_000))
        #expect(valued?.actualCashValue == Money(currency: "USD", minorUnits: 100_000))

        var request = GetValuationRequest()
        request.asOf = "2025-07-15"
        let valuation = try store.valuation(request)
        #expect(valuation.currency == "USD" && valuation.asOf == "2025-07-15")
        let total = try #require(valuation.total)
        #expect(total.itemCount == 6 && total.quantity == 7)
        // Summed apart: #expect misjudged an optional against a sum of literals here.
        let (rcv, acv): (Int64, Int64) = (200_000 + 900_000 + 50_000 + 3_000, 100_000 + 900_000 + 10_000 + 3_000)
        #expect(total.replacementCost?.minorUnits == rcv)
        // The laptop is past its life: its floor of 20 %.
        #expect(total.actualCashValue?.minorUnits == acv)
        #expect(total.purchasePrice?.minorUnits == 50_000)
        #expect(total.unvaluedCount == 1 && total.otherCurrencyCount == 1)
        let byLocation = Dictionary(uniqueKeysWithValues: valuation.byLocation.map { ($0.name, $0.totals!) })
        #expect(byLocation["Home"]?.replacementCost?.minorUnits == 1_150_000)
        #expect(byLocation["Home / Kitchen"]?.replacementCost?.minorUnits == 250_000)
        #expect(byLocation["Home / Bedroom"]?.actualCashValue?.minorUnits == 900_000)
        #expect(byLocation["No location"]?.itemCount == 3)
        #expect(valuation.byCategory.map(\.name) == ["Electronics", "Jewellery", "No category"])
        #expect(valuation.byCategory[0].totals?.actualCashValue?.minorUnits == 110_000)
        #expect(valuation.byTag.map(\.name) == ["screens", "work"])
        #expect(valuation.byTag[0].totals?.itemCount == 2)
        // Jewellery at 90 % of its limit, the contents at 82 % of theirs.
        #expect(valuation.warnings.map(\.scope) == ["category", "contents"])
        #expect(valuation.warnings.map(\.percent) == [90, 82])
        #expect(valuation.warnings[0].message == "Jewellery: $9,000.00 of its $10,000.00 limit (90 %)")

        var kitchenOnly = request
        kitchenOnly.locationKey = kitchen.key
        let scoped = try store.valuation(kitchenOnly)
        #expect(scoped.total?.itemCount == 2 && scoped.byLocation.map(\.name) == ["Home / Kitchen"])
        // Before the laptop aged: the whole of it.
        request.asOf = "2015-01-01"
        let whole: Int64 = 200_000 + 50_000
        #expect(try store.valuation(request).byCategory[0].totals?.actualCashValue?.minorUnits == whole)
        request.asOf = "yesterday"
        #expect(storeError { try store.valuation(request) }?.rpcStatus == .invalidArgument)

        var expensive = ListItemsRequest()
        expensive.minValue = Money(currency: "", minorUnits: 100_000)
        #expect(try store.list(expensive).items.map(\.name) == ["TV", "Ring"])
        expensive.maxValue = Money(currency: "USD", minorUnits: 500_000)
        #expect(try store.list(expensive).items.map(\.name) == ["TV"])
        expensive.maxValue = Money(currency: "EUR", minorUnits: 1)
        #expect(storeError { try store.list(expensive) }?.rpcStatus == .invalidArgument)
        var tagged = ListItemsRequest()
        tagged.tag = "SCREENS"
        #expect(try store.list(tagged).items.map(\.name) == ["TV", "Old laptop"])
        tagged.categoryKey = jewellery.key
        #expect(try store.list(tagged).totalCount == 0)
        var priced = ListItemsRequest()
        priced.asOf = "2025-07-15"
        #expect(try store.list(priced).items.compactMap(\.valuation).count == 6)
    }

    @Test func readinessCountsMissingEvidencePerLocationWithAScoreAndTheWorstGaps() throws {
        let (folder, store) = try openStore()
        defer { folder.remove() }
        let room = try store.createLocation(locationRequest("Study"), now: 1)
        var complete = createRequest("Desk", serial: "D-1")
        complete.locationKey = room.key
        complete.purchaseDate = "2020-05-05"
        complete.purchasePrice = Money(currency: "", minorUnits: 20_000)
        let desk = try store.create(complete, now: 2).item
        var receipt = attachRequest(desk.key, UUID().uuidString.lowercased())
        receipt.role = .receipt
        _ = try store.attachPhoto(receipt, now: 3)
        _ = try store.attachPhoto(attachRequest(desk.key, UUID().uuidString.lowercased()), now: 3)
        var bare = createRequest("Chair")
        bare.locationKey = room.key
        _ = try store.create(bare, now: 4)
        _ = try store.create(createRequest("Umbrella", value: 10), now: 5)

        let readiness = try store.readiness(GetReadinessRequest())
        let overall = try #require(readiness.overall)
        #expect(overall.itemCount == 3)
        #expect(overall.missing.map(\.missing) == [2, 2, 2, 1, 2])
        // 15 pairs, 9 missing: 40 %.
        #expect(overall.scorePercent == 40)
        #expect(overall.gaps.map(\.name) == ["Chair", "Umbrella"])
        #expect(overall.gaps[0].missing == [.photo, .receipt, .serial, .value, .purchaseDate])
        #expect(readiness.locations.map(\.name) == ["Study", "No location"])
        #expect(readiness.locations[0].scorePercent == 50)
        var scoped = GetReadinessRequest()
        scoped.locationKey = UUID().uuidString.lowercased()
        #expect(storeError { try store.readiness(scoped) }?.rpcStatus == .notFound)
    }

    @Test func calendarDatesParseStrictlyAndCountWholeMonths() {
        #expect(CalendarDate("2024-02-29")?.description == "2024-02-29")
        #expect(CalendarDate("2023-02-29") == nil && CalendarDate("2024-13-01") == nil && CalendarDate("24-01-01") == nil)
        #expect(CalendarDate("2024-1-01") == nil && CalendarDate("２０２４-01-01") == nil)
        #expect(CalendarDate(utcMilliseconds: 0).description == "1970-01-01")
        #expect(CalendarDate(utcMilliseconds: 1_709_164_800_000).description == "2024-02-29")
        let start = CalendarDate("2023-01-31")!
        #expect(start.months(until: CalendarDate("2023-02-28")!) == 0)
        #expect(start.months(until: CalendarDate("2023-03-31")!) == 2)
        #expect(Money(currency: "JPY", minorUnits: 1_234_567).formatted() == "¥1,234,567")
        #expect(Money(currency: "KWD", minorUnits: 1_500).formatted() == "KWD 1.500")
        #expect(Money.parse("1,299.5", currency: "USD")?.minorUnits == 129_950)
        #expect(Money.parse("1.999", currency: "USD") == nil && Money.parse("-3", currency: "USD") == nil)
    }
}
