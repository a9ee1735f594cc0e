import ClaimReport
import Foundation
import Proto
import PDF
import Testing

/// The PDF packet, checked with the tools an adjuster's office would trust: qpdf, poppler.
@Suite(.serialized) struct ClaimPDFReportTests {
    @Test func pdfPacketIsValidAndHoldsEveryItemPhotoTotalAndChecksum() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let cover = ClaimCoverOverrides(policyNumber: "HO-3 999-0001")
        let (path, summary, gatherer) = try await fixture.write(.pdf, "claim.pdf", options: ClaimReportOptions(asOf: "2026-01-15", cover: cover))
        try ClaimSamples.keep(path, as: "claim-sample.pdf")

        try await Tool.checkStructure(of: path)
        // Cover, Kitchen, Bedroom, No location, totals, checksums.
        let info = try await Tool.info(of: path)
        #expect(info["Pages"] == "6", "\(info)")
        #expect(summary.pages == 6 && summary.items == 5 && summary.sections == 3)
        #expect(info["Title"] == "Contents inventory / claim packet — Everything", "\(info)")

        let text = try await Tool.text(of: path)
        for name in [ClaimFixture.torch, ClaimFixture.fridge, "Chair, \"Eames\" <replica> & 'ottoman'", ClaimFixture.hose] {
            #expect(text.contains(name), "\(name) is not in the PDF's text")
        }
        // DejaVu has no CJK: Droid Sans Fallback (fonts-droid-fallback, which ops/setup installs)
        // prints it. A character no font has is drawn visibly and listed (PDFFontTests).
        guard FileManager.default.fileExists(atPath: PDFFont.cjkFallbackPath) else {
            Issue.record("\(PDFFont.cjkFallbackPath) is missing: apt-get install fonts-droid-fallback (ops/setup does)")
            return
        }
        #expect(text.contains(ClaimFixture.tokyo), "the CJK name is not in the PDF's text")
        #expect(summary.missingCharacters.isEmpty, "\(summary.missingCharacters)")
        for serial in ["CB-2041", "HT-R-7730", "ATL-5521"] { #expect(text.contains(serial), "serial \(serial)") }
        for field in ["Zoë Ångström", "Acme Mutual", "HO-3 999-0001", "12 Rue de l'Église", "2026-01-15", "Contents inventory / claim packet"] {
            #expect(text.contains(field), "cover field \(field)")
        }
        #expect(!text.contains("HO-3 551-2041"), "the flag replaces the policy's number")

        // The totals as GetValuation answers them, on the cover.
        var request = GetValuationRequest()
        request.asOf = "2026-01-15"
        let valuation = try await fixture.clients.items.call(ItemServiceRPC.getValuation, request, options: fixture.options)
        let total = try #require(valuation.total)
        let rcv = try #require(total.replacementCost).formatted(defaultCurrency: "USD")
        #expect(text.contains(rcv), "RCV total \(rcv)")
        #expect(text.contains(try #require(total.actualCashValue).formatted(defaultCurrency: "USD")))
        for page in 1...6 { #expect(text.contains("Page \(page) of 6"), "page \(page)'s number") }
        #expect(text.contains("Subtotal Home / Kitchen") && text.contains("Subtotal Home / Bedroom") && text.contains("Totals by category") && text.contains("Appliances"))

        // One embedded JPEG per attached image photo; the PDF receipt is listed, not embedded.
        let images = try await Tool.images(in: path)
        #expect(images.count == fixture.jpegPhotos && fixture.jpegPhotos == 7, "\(images)")
        #expect(images.allSatisfy { $0.encoding == "jpeg" && max($0.width, $0.height) <= 256 }, "\(images)")
        // Kitchen (page 3, after Bedroom: siblings by name): the orientation-6 landscape's
        // thumbnail is upright (wider than tall), as is Landscape_1's; the portrait serial plate
        // and the square receipt are not.
        #expect(images.filter { $0.page == 3 }.count == 4 && images.filter { $0.page == 3 && $0.width > $0.height }.count == 2, "\(images)")
        #expect(gatherer.figures.thumbnailsFetched == 7)
        let tokyo = try #require(fixture.items[ClaimFixture.tokyo])
        let receipt = try #require(tokyo.photos.first { $0.role == .receipt })
        #expect(text.contains(receipt.imageKey), "the PDF receipt is listed by its key")
        #expect(text.contains("PDF document"))
        #expect(text.contains(".pdf"))

        // Every original's SHA-256 is on the last pages.
        for item in fixture.items.values {
            for photo in item.photos {
                var stat = StatImageRequest()
                stat.key = photo.imageKey
                let info = try await fixture.clients.images.call(ImageServiceRPC.statImage, stat, options: fixture.options)
                #expect(text.contains(String(info.checksum.dropFirst("sha256:".count))), "checksum of \(photo.imageKey)")
            }
        }

        for page in 1...6 {
            let picture = try await Tool.render(path, page: page)
            #expect(picture.inkedPixels > 150, "page \(page) looks blank (\(picture.inkedPixels) inked pixels)")
        }
    }

    @Test func pdfOfOneLocationHoldsOnlyItsSubtree() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let (path, summary, _) = try await fixture.write(.pdf, "kitchen.pdf", location: fixture.kitchen)
        try await Tool.checkStructure(of: path)
        let text = try await Tool.text(of: path)
        #expect(summary.items == 2 && summary.sections == 1)
        #expect(text.contains(ClaimFixture.torch) && !text.contains(ClaimFixture.fridge) && !text.contains(ClaimFixture.hose))
        #expect(try await Tool.images(in: path).count == 4)
    }
}

/// Copies of what a test wrote, kept when HOMEPWNER_CLAIM_SAMPLES names a folder (to look at).
enum ClaimSamples {
    static func keep(_ path: String, as name: String) throws {
        guard let folder = ProcessInfo.processInfo.environment["HOMEPWNER_CLAIM_SAMPLES"], !folder.isEmpty else { return }
        let target = folder + "/" + name
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: path, toPath: target)
    }
}
