import ClaimReport
import Digest
import Foundation
import Proto
import Testing
import TestSupport

/// When each photo was taken (the image service's `taken_at`, from its EXIF) beside when it was
/// received, on the ledger's pages of the PDF and the HTML, and in the CSV beside the files.
@Suite(.serialized) struct ClaimTakenTests {
    /// A camera with four originals: a photo whose EXIF has a date and its offset, one with a
    /// date alone (`exif_gps.jpg`), one without (`hopper.jpg`) and a PDF receipt.
    static func camera(_ fixture: ClaimFixture) async throws -> (item: Item, originals: [[UInt8]]) {
        let camera = try await fixture.item {
            $0.name = "Mirrorless camera"
            $0.serialNumber = "MC-0507"
            $0.valueInDollars = 900
        }
        let dated = EXIFSamples.inserting(
            EXIFSamples.app1([EXIFSamples.dateTimeOriginal("2024:05:07 09:33:04"), EXIFSamples.offsetTimeOriginal("+08:00")]),
            into: try Fixtures.orientationPhoto("Landscape_1.jpg"))
        let originals = [dated, try Fixtures.pillowImage("exif_gps.jpg"), try Fixtures.pillowImage("hopper.jpg"), try fixture.receiptPDF()]
        for (bytes, role) in zip(originals, [PhotoRole.photo, .serialPlate, .damage, .receipt]) {
            try await fixture.attach(bytes, to: camera, role: role)
        }
        try await fixture.waitForThumbnails()
        return (try #require(fixture.items[camera.name]), originals)
    }

    /// The SHA-256 hex of `bytes`.
    static func hex(_ bytes: [UInt8]) -> String { String(SHA256.checksum(bytes).dropFirst("sha256:".count)) }

    @Test func theLedgerShowsWhenEachPhotoWasTakenBesideWhenItWasReceived() async throws {
        let fixture = try await ClaimFixture(populated: false)
        defer { fixture.shutdown() }
        let (camera, originals) = try await Self.camera(fixture)
        var received: [String] = []
        for photo in camera.photos {
            var stat = StatImageRequest()
            stat.key = photo.imageKey
            received.append(ClaimText.utc(milliseconds: try await fixture.clients.images.call(ImageServiceRPC.statImage, stat, options: fixture.options).createdAtMs))
        }
        let taken: [String?] = ["taken 2024-05-07 09:33:04 +08:00", "taken 2099-09-29 10:10:10 (no time zone)", "taken: no date in the photo", nil]

        // PDF, as poppler lays it out: the item and "received" on one line, the SHA-256 and
        // "taken" on the next, what it is on the third; no column runs into another.
        let (pdf, _, _) = try await fixture.write(.pdf, "camera.pdf", options: ClaimReportOptions(asOf: "2026-01-15"))
        try ClaimSamples.keep(pdf, as: "claim-taken-sample.pdf")
        try await Tool.checkStructure(of: pdf)
        let lines = try await Tool.run("pdftotext", ["-layout", "-enc", "UTF-8", pdf, "-"]).text.components(separatedBy: "\n")
        for (index, bytes) in originals.enumerated() {
            let sha = Self.hex(bytes)
            // The last mention: a PDF receipt is also listed under its item, by its file name.
            let at = try #require(lines.lastIndex { $0.contains(sha) }, "the SHA-256 of original \(index)")
            let line = lines[at].trimmingCharacters(in: .whitespaces)
            if let taken = taken[index] {
                #expect(line.hasPrefix(sha) && line.hasSuffix(taken) && line.contains(sha + "  "), "\(line)")
            } else {
                #expect(line == sha && !lines[at].contains("taken"), "a document has no time taken: \(line)")
            }
            let above = lines[at - 1].trimmingCharacters(in: .whitespaces)
            #expect(above.hasPrefix("Mirrorless camera") && above.hasSuffix("received " + received[index]), "\(above)")
            #expect(lines[at + 1].contains(["Photo", "Serial plate", "Damage", "Receipt"][index] + " · "), "\(lines[at + 1])")
        }
        #expect(lines.contains { $0.contains("\"Taken\" is when the camera") })

        // HTML: a Taken column before Received.
        let (folder, _, _) = try await fixture.write(.html, "camera", options: ClaimReportOptions(asOf: "2026-01-15"))
        let html = try String(contentsOfFile: folder + "/index.html", encoding: .utf8)
        #expect(html.contains("<th>Taken</th><th>Received</th><th>SHA-256</th>"))
        let cells = ["<td>2024-05-07 09:33:04 +08:00</td>", "<td>2099-09-29 10:10:10 (no time zone)</td>",
                     "<td><span class=\"meta\">no date in the photo</span></td>", "<td></td>"]
        for (index, bytes) in originals.enumerated() {
            let row = try #require(html.components(separatedBy: "\n").first { $0.contains(Self.hex(bytes)) && $0.hasPrefix("<tr>") })
            #expect(row.contains(cells[index] + "<td>\(received[index])</td>"), "\(row)")
        }

        // CSV: "Photo taken" beside "Photo files", in the same order, as the service records it.
        let (csv, _, _) = try await fixture.write(.csv, "camera.csv")
        let rows = try await ClaimCSVReportTests.pythonRows(csv)
        #expect(rows.first?.suffix(2) == ["Photo files", "Photo taken"])
        let row = try #require(rows.first { $0.count == 16 && $0[2] == "Mirrorless camera" })
        #expect(row[14].components(separatedBy: "; ") == originals.map { Self.hex($0) + ($0.starts(with: [0xFF, 0xD8]) ? ".jpg" : ".pdf") })
        #expect(row[15].components(separatedBy: "; ") == ["2024-05-07T09:33:04+08:00", "2099-09-29T10:10:10", "", ""], "\(row[15])")
    }

    @Test func takenTimesAreWordedForPeople() {
        #expect(ClaimText.taken("2024-05-07T09:33:04+08:00") == "2024-05-07 09:33:04 +08:00")
        #expect(ClaimText.taken("2024-05-07T09:33:04-05:30") == "2024-05-07 09:33:04 -05:30")
        #expect(ClaimText.taken("2099-09-29T10:10:10") == "2099-09-29 10:10:10 (no time zone)")
        #expect(ClaimText.taken("") == "")
        #expect(ClaimText.taken("yesterday") == "yesterday", "another form is shown as it is")
    }
}
