@testable import ClaimReport
import Foundation
import Proto
import Testing

/// The words and tables of `report readiness` and `report value`, from replies made here.
@Suite struct ClaimTextTests {
    @Test func csvTextThatASpreadsheetWouldRunAsAFormulaIsKeptText() {
        for formula in ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2", "@SUM(A1)", "\tx", "\rx"] {
            #expect(ClaimCSVWriter.inert(formula) == "'" + formula)
        }
        for plain in ["Crème brûlée torch", "Холодильник", "3 chairs", "", "a=b"] { #expect(ClaimCSVWriter.inert(plain) == plain) }
        #expect(ClaimCSVWriter.row([ClaimCSVWriter.inert("=1,2")]) == "\"'=1,2\"\r\n")
    }

    @Test func agesReadAsYearsAndMonths() {
        #expect(ClaimText.age(months: -1) == "")
        #expect(ClaimText.age(months: 0) == "under a month")
        #expect(ClaimText.age(months: 5) == "5 mo")
        #expect(ClaimText.age(months: 24) == "2 y")
        #expect(ClaimText.age(months: 27) == "2 y 3 mo")
        #expect(ClaimText.count(1_234_567) == "1,234,567")
        #expect(ClaimText.utc(milliseconds: 0) == "1970-01-01 00:00:00 UTC")
    }

    @Test func readinessTableShowsEachLocationsScoreAndMissingCountsThenTheGaps() {
        var overall = ReadinessGroup()
        overall.name = "Everything"
        overall.itemCount = 3
        overall.scorePercent = 60
        overall.missing = [(Evidence.photo, 1), (.receipt, 2), (.serial, 1), (.value, 0), (.purchaseDate, 2)].map {
            var count = EvidenceCount()
            count.evidence = $0.0
            count.missing = Int64($0.1)
            return count
        }
        var gap = ItemGap()
        gap.itemKey = "0b7e2c1e-0000-4000-8000-000000000001"
        gap.name = "Холодильник"
        gap.missing = [.receipt, .purchaseDate]
        overall.gaps = [gap]
        var kitchen = ReadinessGroup()
        kitchen.key = "k"
        kitchen.name = "Home / Kitchen"
        kitchen.itemCount = 2
        kitchen.scorePercent = 80
        var reply = GetReadinessResponse()
        reply.overall = overall
        reply.locations = [kitchen]
        let text = ReadinessText.render(reply)
        #expect(text.hasPrefix("Claim readiness: 60 % of the evidence is recorded for 3 items\n"), "\(text)")
        #expect(text.contains("location        items  score  no photo  no receipt  no serial  no value  no purchase date\n"), "\(text)")
        #expect(text.contains("Everything          3   60 %         1           2          1         0                 2\n"), "\(text)")
        #expect(text.contains("Home / Kitchen      2   80 %"), "\(text)")
        #expect(text.contains("Холодильник  0b7e2c1e-0000-4000-8000-000000000001  receipt, purchase date"), "\(text)")
    }

    @Test func valuationTablesShowTotalsGroupsLimitsAndWarnings() {
        var totals = ValuationTotals()
        totals.itemCount = 2
        totals.quantity = 7
        totals.replacementCost = Money(currency: "USD", minorUnits: 925_00)
        totals.actualCashValue = Money(currency: "USD", minorUnits: 700_50)
        totals.purchasePrice = Money(currency: "USD", minorUnits: 1_200_00)
        var category = ValuationGroup()
        category.key = "c"
        category.name = "Jewellery"
        category.totals = totals
        category.limit = Money(currency: "USD", minorUnits: 1_000_00)
        var warning = LimitWarning()
        warning.message = "Jewellery: $925.00 of its $1,000.00 limit (92 %)"
        var reply = GetValuationResponse()
        reply.asOf = "2026-01-15"
        reply.currency = "USD"
        reply.total = totals
        reply.byCategory = [category]
        reply.warnings = [warning]
        let text = ValuationText.render(reply, scope: "Home")
        #expect(text.hasPrefix("Valuation as of 2026-01-15 in USD, Home\n"), "\(text)")
        #expect(text.contains("Total      2         7       $1,200.00                 $925.00                  $700.50"), "\(text)")
        #expect(text.contains("Jewellery      2  $925.00  $700.50  $1,000.00      92 %"), "\(text)")
        #expect(text.contains("Warnings:\n  Jewellery: $925.00 of its $1,000.00 limit (92 %)\n"), "\(text)")
    }
}
