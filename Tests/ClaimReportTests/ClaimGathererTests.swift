@testable import ClaimReport
import Foundation
import Harness
import Proto
import RPC
import Testing
import TestSupport

/// How the report gathers: page by page whatever the item count, and the refusals.
@Suite struct ClaimGathererTests {
    @Test func aReportOfHundredsOfItemsHoldsOnePageAtATime() async throws {
        let fixture = try await ClaimFixture(populated: false)
        defer { fixture.shutdown() }
        let home = try await fixture.location("Home", in: nil, kind: .home)
        let garage = try await fixture.location("Garage", in: home, kind: .room)
        let shed = try await fixture.location("Shed", in: home, kind: .room)
        let count = 330
        let items = fixture.clients.items, options = fixture.options
        for start in stride(from: 0, to: count, by: 16) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in start..<min(count, start + 16) {
                    var request = CreateItemRequest()
                    request.name = String(format: "Tool %03d", count - index)
                    request.locationKey = index % 3 == 0 ? shed.key : garage.key
                    request.serialNumber = "T-\(index)"
                    request.purchasePrice = Money(currency: "USD", minorUnits: Int64(100 + index))
                    group.addTask { _ = try await items.call(ItemServiceRPC.createItem, request, options: options) }
                }
                try await group.waitForAll()
            }
        }
        let (path, summary, gatherer) = try await fixture.write(.csv, "tools.csv", pageSize: 40)
        #expect(summary.items == Int64(count))
        let figures = gatherer.figures
        // Garage's 220 items in 6 pages, Shed's 110 in 3: never more than one page held, none over 40.
        #expect(figures.mostPagesHeld == 1, "\(figures)")
        #expect(figures.largestPage == 40 && figures.pagesFetched == 9 && figures.itemsHandedOut == count, "\(figures)")
        let rows = try await ClaimCSVReportTests.pythonRows(path)
        #expect(rows.count == count + 1)
        let garageNames = rows.dropFirst().filter { $0[0] == "Home / Garage" }.map { $0[2] }
        #expect(garageNames.count == 220 && garageNames == garageNames.sorted(), "by name within a room, across pages")

        let (pdf, pdfSummary, pdfGatherer) = try await fixture.write(.pdf, "tools.pdf", pageSize: 40)
        #expect(pdfGatherer.figures.mostPagesHeld == 1 && pdfGatherer.figures.largestPage == 40)
        try await Tool.checkStructure(of: pdf)
        try ClaimSamples.keep(pdf, as: "claim-many.pdf")
        let text = try await Tool.text(of: pdf)
        #expect(text.contains("Tool 001") && text.contains("Tool 330"))
        // The last pages carry the history's head: every create is an entry before it.
        let head = try #require(try await fixture.clients.items.call(HistoryServiceRPC.getHistory, GetHistoryRequest(), options: fixture.options).head)
        #expect(head.seq >= Int64(count))
        #expect(text.contains("History head when this report began: entry \(head.seq), \(head.hash)"), "\(text.suffix(3000))")
        #expect(try await Tool.info(of: pdf)["Pages"] == String(pdfSummary.pages) && pdfSummary.pages > 8)
    }

    @Test func anEmptyLocationIsNothingToReportAndLeavesNoFile() async throws {
        let fixture = try await ClaimFixture(populated: false)
        defer { fixture.shutdown() }
        let home = try await fixture.location("Home", in: nil, kind: .home)
        let attic = try await fixture.location("Attic", in: home, kind: .room)
        var request = CreateItemRequest()
        request.name = "Lamp"
        request.locationKey = home.key
        _ = try await fixture.clients.items.call(ItemServiceRPC.createItem, request, options: fixture.options)
        for format in ClaimFormat.allCases {
            await #expect(throws: ClaimReportError.emptySelection(scope: "Home / Attic")) {
                _ = try await fixture.write(format, "attic.\(format.rawValue)", location: attic)
            }
        }
        #expect(ClaimReportError.emptySelection(scope: "Home / Attic").message == "no items in Home / Attic; nothing to report")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder).isEmpty)
    }

    @Test func anOutputThatCannotBeWrittenIsRefusedBeforeAnythingIsAsked() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("claimtests-out-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/full", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder + "/full/index.html"))
        func refusal(_ path: String, _ format: ClaimFormat) -> ClaimReportError? {
            do {
                _ = try ClaimOutput(path: path, format: format)
                return nil
            } catch {
                return error
            }
        }
        let missing = refusal(folder + "/no-such-folder/claim.pdf", .pdf)
        #expect(missing?.kind == .unwritableOutput && missing?.message.contains("no-such-folder does not exist") == true, "\(String(describing: missing))")
        let intoFolder = refusal(folder, .csv)
        #expect(intoFolder?.kind == .unwritableOutput && intoFolder?.message.contains("it is a folder") == true)
        let notEmpty = refusal(folder + "/full", .html)
        #expect(notEmpty?.kind == .unwritableOutput && notEmpty?.message.contains("not empty") == true)
        // An empty folder is taken, and nothing is left of a discarded output.
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        let output = try ClaimOutput(path: folder + "/empty/", format: .html)
        #expect(FileManager.default.fileExists(atPath: output.workingPath))
        output.discard()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["empty", "full"])
    }

    @Test func theImageServiceDownStopsTheReportWithUnavailableNamingIt() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let harness = fixture.harness
        await offThePool { harness.stop(.imageService) }
        let gatherer = ClaimGatherer(
            services: ClaimServices(clients: fixture.clients, endpoints: fixture.harness.endpoints, timeoutMilliseconds: 2000))
        let output = try ClaimOutput(path: fixture.folder + "/down.pdf", format: .pdf)
        do {
            _ = try await ClaimReport.write(location: nil, to: output, gatherer: gatherer)
            Issue.record("the report was written without the image service")
        } catch let error as RPCError {
            #expect(error.code == .unavailable || error.code == .deadlineExceeded, "\(error)")
            #expect(error.message.contains("image-service at \(fixture.harness.endpoints.imageRPC) does not answer"), "\(error.message)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder).isEmpty)
    }
}
