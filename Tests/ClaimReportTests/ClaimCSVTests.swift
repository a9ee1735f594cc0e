@testable import ClaimReport
import Foundation
import Proto
import Testing

/// The CSV, read back by Python's csv module as a spreadsheet or an insurer's import would.
@Suite struct ClaimCSVReportTests {
    /// The rows Python's csv.reader reads from `path` (UTF-8, newline='').
    static func pythonRows(_ path: String) async throws -> [[String]] {
        let script = "import csv, json, sys\nwith open(sys.argv[1], newline='', encoding='utf-8') as f:\n    print(json.dumps(list(csv.reader(f))))\n"
        let output = try await Tool.run("python3", ["-c", script, path])
        return try JSONDecoder().decode([[String]].self, from: output.stdout)
    }

    @Test func csvReadsBackInPythonWithQuotesCommasLineBreaksAndEveryScriptIntact() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let (path, summary, gatherer) = try await fixture.write(.csv, "claim.csv", options: ClaimReportOptions(asOf: "2026-01-15"))
        #expect(summary.items == 5)
        // The CSV needs no thumbnail.
        #expect(gatherer.figures.thumbnailsFetched == 0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(!bytes.starts(with: [0xEF, 0xBB, 0xBF]), "no byte order mark")
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("Room,Quantity,Description,Brand,Model,Serial,Purchase date,Purchase price,Replacement cost,ACV,Currency,Category,Tags,Notes,Photo files,Photo taken\r\n"))

        let rows = try await Self.pythonRows(path)
        #expect(rows.count == 6, "\(rows)")
        #expect(rows.allSatisfy { $0.count == 16 })
        // In ListLocations order (depth first, siblings by name), by name within a room, items in
        // no location last.
        #expect(rows.dropFirst().map { $0[0] } == ["Home / Bedroom", "Home / Bedroom", "Home / Kitchen", "Home / Kitchen", "No location"])
        #expect(rows.dropFirst().map { $0[2] } == [ClaimFixture.chair, ClaimFixture.fridge, ClaimFixture.torch, ClaimFixture.tokyo, ClaimFixture.hose])

        let chair = try #require(rows.first { $0[2] == ClaimFixture.chair })
        #expect(chair[1] == "6" && chair[7] == "720.00" && chair[10] == "USD" && chair[11] == "Furniture")
        #expect(chair[13] == ClaimFixture.chairNotes, "the notes' line break survives: \(chair[13])")
        let fridge = try #require(rows.first { $0[2] == ClaimFixture.fridge })
        #expect(fridge[3] == "Атлант" && fridge[4] == "ХМ 4208" && fridge[5] == "ATL-5521" && fridge[6] == "2019-07-01")
        #expect(fridge[7] == "480.00" && fridge[8] == "650.00")
        let torch = try #require(rows.first { $0[2] == ClaimFixture.torch })
        #expect(torch[12] == "kitchen; gas")
        // The photo files as the HTML export names the originals: <sha256>.<ext>, "; " apart.
        let files = torch[14].components(separatedBy: "; ")
        #expect(files.count == 3 && files.allSatisfy { $0.count == 64 + 4 && $0.hasSuffix(".jpg") }, "\(files)")
        let tokyoFiles = try #require(rows.first { $0[2] == ClaimFixture.tokyo })[14].components(separatedBy: "; ")
        #expect(tokyoFiles.count == 2 && tokyoFiles[1].hasSuffix(".pdf"), "\(tokyoFiles)")
        let hose = try #require(rows.last)
        #expect(hose[8] == "25.00" && hose[14] == "", "the value_in_dollars basis: \(hose)")
        // None of the household's photos has an EXIF date (ClaimTakenTests has some).
        #expect(rows.dropFirst().allSatisfy { $0[15] == "" }, "\(rows.map { $0[15] })")

        // ACV after straight-line depreciation, as GetValuation computes it.
        let item = try #require(fixture.items[ClaimFixture.fridge])
        var get = GetItemRequest()
        get.key = item.key
        get.asOf = "2026-01-15"
        let valued = try await fixture.clients.items.call(ItemServiceRPC.getItem, get, options: fixture.options)
        #expect(fridge[9] == valued.valuation?.actualCashValue?.decimalText)
    }

    @Test func csvFieldsAreQuotedOnlyWhenRFC4180AsksAndQuotesDoubled() {
        #expect(ClaimCSVWriter.field("plain") == "plain")
        #expect(ClaimCSVWriter.field("a,b") == "\"a,b\"")
        #expect(ClaimCSVWriter.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(ClaimCSVWriter.field("two\nlines") == "\"two\nlines\"")
        #expect(ClaimCSVWriter.field("cr\rhere") == "\"cr\rhere\"")
        #expect(ClaimCSVWriter.row(["a", "b,c"]) == "a,\"b,c\"\r\n")
    }
}
