import Foundation
import Harness
import Proto
import RPC
import Testing
import TestSupport

/// `homepwner report readiness|value|claim` through the real executable against the harness:
/// what each prints, and the exit code of each way a claim report can fail.
@Suite struct ClaimReportCLITests {
    /// Home / Kitchen with a torch (a photo attached, as a receipt) and a kettle; an empty Home / Attic.
    static func household(_ harness: Harness) async throws -> (kitchen: Location, torch: Item) {
        let clients = try harness.clients()
        defer { clients.close() }
        func location(_ name: String, in parent: String) async throws -> Location {
            var request = CreateLocationRequest()
            request.name = name
            request.parentKey = parent
            return try await clients.items.call(ItemServiceRPC.createLocation, request)
        }
        let home = try await location("Home", in: "")
        let kitchen = try await location("Kitchen", in: home.key)
        _ = try await location("Attic", in: home.key)
        var create = CreateItemRequest()
        create.name = "Crème brûlée torch"
        create.serialNumber = "CB-2041"
        create.locationKey = kitchen.key
        create.purchaseDate = "2021-03-14"
        create.purchasePrice = Money(currency: "USD", minorUnits: 49_99)
        create.replacementValue = Money(currency: "USD", minorUnits: 59_99)
        var torch = try await clients.items.call(ItemServiceRPC.createItem, create)
        var put = PutImageRequest()
        put.ownerKey = torch.key
        put.data = try Fixtures.orientationPhoto("Landscape_6.jpg")
        let image = try await clients.images.call(ImageServiceRPC.putImage, put)
        var attach = AttachPhotoRequest()
        attach.itemKey = torch.key
        attach.imageKey = image.key
        attach.role = .receipt
        torch = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
        create = CreateItemRequest()
        create.name = "Kettle, \"whistling\""
        create.locationKey = kitchen.key
        create.valueInDollars = 30
        _ = try await clients.items.call(ItemServiceRPC.createItem, create)
        return (kitchen, torch)
    }

    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hp-report-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func readinessValueAndClaimPrintTablesJSONAndWriteEachFormat() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let (_, torch) = try await Self.household(harness)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let readiness = try await CLITests.homepwner(["report", "readiness"], harness: harness)
        #expect(readiness.status == 0, "\(readiness.stderr)")
        #expect(readiness.stdout.hasPrefix("Claim readiness: ") && readiness.stdout.contains("Home / Kitchen"), "\(readiness.stdout)")
        #expect(readiness.stdout.contains("no receipt") && readiness.stdout.contains("Worst gaps"), "\(readiness.stdout)")
        let readinessJSON = try await CLITests.homepwner(["report", "readiness", "--location", "Home/Kitchen", "--json"], harness: harness)
        let readinessObject = try JSONSerialization.jsonObject(with: Data(readinessJSON.stdout.utf8)) as? [String: Any]
        #expect((readinessObject?["overall"] as? [String: Any])?["item_count"] as? String == "2", "\(readinessJSON.stdout)")

        let value = try await CLITests.homepwner(["report", "value", "--as-of", "2026-01-15"], harness: harness)
        #expect(value.status == 0, "\(value.stderr)")
        #expect(value.stdout.hasPrefix("Valuation as of 2026-01-15 in USD") && value.stdout.contains("$89.99"), "\(value.stdout)")
        #expect(value.stdout.contains("By location") && value.stdout.contains("Home / Kitchen"), "\(value.stdout)")
        let valueJSON = try await CLITests.homepwner(["report", "value", "--json", "--location", "Kitchen"], harness: harness)
        let valueObject = try JSONSerialization.jsonObject(with: Data(valueJSON.stdout.utf8)) as? [String: Any]
        #expect(valueObject?["as_of"] as? String != nil && valueObject?["currency"] as? String == "USD", "\(valueJSON.stdout)")
        let badDate = try await CLITests.homepwner(["report", "value", "--as-of", "2026-02-30"], harness: harness)
        #expect(badDate.status == 3, "\(badDate.stderr)")

        let pdf = folder + "/claim.pdf"
        let claim = try await CLITests.homepwner(
            ["report", "claim", "--format", "pdf", "-o", pdf, "--location", "Home/Kitchen", "--policyholder", "Zoë Ångström"], harness: harness)
        #expect(claim.status == 0, "\(claim.stderr)")
        // Cover, Home / Kitchen, the totals, the checksums.
        #expect(claim.stdout.hasPrefix("wrote \(pdf): 2 items in 1 location, 1 photo (1 shown), 4 pages"), "\(claim.stdout)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pdf)))
        #expect(bytes.starts(with: Array("%PDF-1.7".utf8)) && String(decoding: bytes.suffix(6), as: UTF8.self) == "%%EOF\n")
        // Without a terminal there is no progress bar on stderr.
        #expect(claim.stderr.isEmpty, "\(claim.stderr)")

        let csv = folder + "/claim.csv"
        let csvRun = try await CLITests.homepwner(["report", "claim", "--format", "csv", "-o", csv, "--json"], harness: harness)
        #expect(csvRun.status == 0, "\(csvRun.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(csvRun.stdout.utf8)) as? [String: Any]
        #expect(summary?["items"] as? Int == 2 && summary?["format"] as? String == "csv", "\(csvRun.stdout)")
        let text = try String(contentsOfFile: csv, encoding: .utf8)
        #expect(text.components(separatedBy: "\r\n").count == 4 && text.contains("\"Kettle, \"\"whistling\"\"\""), "\(text)")

        let html = folder + "/claim-html"
        let htmlRun = try await CLITests.homepwner(["report", "claim", "--format", "html", "-o", html, "--originals"], harness: harness)
        #expect(htmlRun.status == 0, "\(htmlRun.stderr)")
        #expect(FileManager.default.fileExists(atPath: html + "/index.html"))
        let image = try #require(torch.photoKeys.first)
        #expect(FileManager.default.fileExists(atPath: html + "/thumbs/\(image).jpg"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: html + "/originals").count == 1)

        let help = try await CLITests.homepwner(["report", "claim", "--help"], harness: harness)
        #expect(help.status == 0 && help.stdout.contains("UTF-8 without a byte order mark"), "\(help.stdout)")
    }

    @Test func claimExitCodesSayWhatWentWrong() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        _ = try await Self.household(harness)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let out = folder + "/claim.pdf"

        let unknown = try await CLITests.homepwner(["report", "claim", "--format", "pdf", "-o", out, "--location", "Nowhere"], harness: harness)
        #expect(unknown.status == 4 && unknown.stderr.contains("no location named \"Nowhere\""), "\(unknown.stderr)")
        let empty = try await CLITests.homepwner(["report", "claim", "--format", "pdf", "-o", out, "--location", "Home/Attic"], harness: harness)
        #expect(empty.status == 3 && empty.stderr.contains("no items in Home / Attic; nothing to report"), "\(empty.stderr)")
        let unwritable = try await CLITests.homepwner(["report", "claim", "--format", "pdf", "-o", "/nonexistent-hp-folder/claim.pdf"], harness: harness)
        #expect(
            unwritable.status == 2 && unwritable.stderr.contains("/nonexistent-hp-folder/claim.pdf")
                && unwritable.stderr.contains("the folder /nonexistent-hp-folder does not exist"), "\(unwritable.stderr)")
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder + "/note.txt"))
        let notEmpty = try await CLITests.homepwner(["report", "claim", "--format", "html", "-o", folder], harness: harness)
        #expect(notEmpty.status == 2 && notEmpty.stderr.contains("not empty"), "\(notEmpty.stderr)")
        let noFormat = try await CLITests.homepwner(["report", "claim", "-o", out], harness: harness)
        #expect(noFormat.status == 2 && noFormat.stderr.contains("--format"), "\(noFormat.stderr)")
        let originals = try await CLITests.homepwner(["report", "claim", "--format", "pdf", "-o", out, "--originals"], harness: harness)
        #expect(originals.status == 2, "\(originals.stderr)")
        // Nothing was left behind by any of them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["note.txt"])

        await offThePool { harness.stop(.imageService) }
        let imagesDown = try await CLITests.homepwner(["report", "claim", "--format", "pdf", "-o", out, "--timeout", "2000"], harness: harness)
        #expect(imagesDown.status == 5 && imagesDown.stderr.contains("image-service at"), "\(imagesDown.stderr)")
        await offThePool { harness.stop(.itemService) }
        let itemsDown = try await CLITests.homepwner(["report", "readiness", "--timeout", "2000"], harness: harness)
        #expect(itemsDown.status == 5, "\(itemsDown.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["note.txt"])
    }
}
