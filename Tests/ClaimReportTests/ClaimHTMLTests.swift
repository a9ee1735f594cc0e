@testable import ClaimReport
import Digest
import Foundation
import Proto
import Testing

/// The HTML folder: complete, offline, escaped, and what headless Chromium draws of it.
@Suite(.serialized) struct ClaimHTMLReportTests {
    /// Every value of `attribute="…"` in `html`.
    static func values(of attribute: String, in html: String) -> [String] {
        html.components(separatedBy: attribute + "=\"").dropFirst().compactMap { $0.split(separator: "\"", maxSplits: 1).first.map(String.init) }
    }

    @Test func htmlFolderOpensOfflineWithEveryThumbnailAndOriginalAndPrints() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let (folder, summary, _) = try await fixture.write(.html, "claim", options: ClaimReportOptions(asOf: "2026-01-15", originals: true))
        let html = try String(contentsOfFile: folder + "/index.html", encoding: .utf8)
        #expect(summary.thumbnails == 7 && summary.originals == 8, "\(summary)")

        // Every image and link is relative and there; nothing is fetched from elsewhere.
        let sources = Self.values(of: "src", in: html)
        #expect(sources.count == 7 && sources.allSatisfy { $0.hasPrefix("thumbs/") && $0.hasSuffix(".jpg") }, "\(sources)")
        let links = Self.values(of: "href", in: html).filter { !$0.hasPrefix("#") }
        #expect(links.count == 8, "\(links)")
        for reference in sources + links {
            #expect(!reference.contains("://") && !reference.hasPrefix("/"), "\(reference) is not relative")
            #expect(FileManager.default.fileExists(atPath: folder + "/" + reference), "\(reference) is missing")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/thumbs").count == 7)
        // Each original is what the service holds: its name is its SHA-256.
        let originals = try FileManager.default.contentsOfDirectory(atPath: folder + "/originals")
        #expect(originals.count == 8 && originals.filter { $0.hasSuffix(".pdf") }.count == 1, "\(originals)")
        for name in originals {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/originals/" + name)))
            #expect("sha256:" + name.prefix(64) == SHA256.checksum(bytes), "\(name)")
        }
        // No script, a print stylesheet, everything escaped.
        #expect(!html.lowercased().contains("<script") && !html.lowercased().contains("javascript:"))
        #expect(html.contains("@media print") && html.contains("break-before: page"))
        #expect(html.contains("Chair, &quot;Eames&quot; &lt;replica&gt; &amp; &#39;ottoman&#39;"))
        #expect(!html.contains("<replica>"))
        for name in [ClaimFixture.torch, ClaimFixture.fridge, ClaimFixture.tokyo, "12 Rue de l&#39;Église"] { #expect(html.contains(name), "\(name)") }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.folder).filter { $0.contains(".part-") || $0.hasPrefix(".claim-ledger") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // Headless Chromium prints it and draws it: neither is blank.
        let pdf = fixture.folder + "/printed.pdf", png = fixture.folder + "/screen.png"
        let profile = fixture.folder + "/chromium-profile"
        try await Tool.chromium(print: URL(fileURLWithPath: folder + "/index.html"), toPDF: pdf, screenshot: png, profile: profile)
        let printed = try await Tool.info(of: pdf)
        // The cover, a page per location, the categories and the checksums.
        #expect(Int(printed["Pages"] ?? "0") ?? 0 >= 5, "\(printed)")
        let first = try await Tool.render(pdf, page: 1)
        #expect(first.inkedPixels > 300, "the printed cover looks blank (\(first.inkedPixels))")
        let printedText = try await Tool.text(of: pdf)
        #expect(printedText.contains(ClaimFixture.fridge) && printedText.contains("Contents inventory / claim packet"))
        // The screenshot, pixel by pixel: inked, with the photos' colours where the thumbnails are.
        let drawn = Self.screenshotProblems(try await Tool.pixels(ofPNG: png))
        #expect(drawn.isEmpty, "the screenshot of the report: \(drawn)")
        try ClaimSamples.keep(png, as: "claim-html.png")
        try ClaimSamples.keep(pdf, as: "claim-html-printed.pdf")

        // The same check fails where it should: a blank page fails both parts; the report whose
        // thumbnails are gone (the text drawn, the pictures not) fails the colour part alone.
        let blankPage = fixture.folder + "/blank.html", blankPNG = fixture.folder + "/blank.png"
        try "<!DOCTYPE html><title>blank</title>".write(toFile: blankPage, atomically: true, encoding: .utf8)
        try await Tool.chromium(print: URL(fileURLWithPath: blankPage), toPDF: fixture.folder + "/blank.pdf", screenshot: blankPNG, profile: profile)
        let blank = Self.screenshotProblems(try await Tool.pixels(ofPNG: blankPNG))
        #expect(blank.count == 2, "the check passes a blank page: \(blank)")
        for name in try FileManager.default.contentsOfDirectory(atPath: folder + "/thumbs") {
            try FileManager.default.removeItem(atPath: folder + "/thumbs/" + name)
        }
        let textOnlyPNG = fixture.folder + "/text-only.png"
        try await Tool.chromium(
            print: URL(fileURLWithPath: folder + "/index.html"), toPDF: fixture.folder + "/text-only.pdf", screenshot: textOnlyPNG, profile: profile)
        let textOnly = Self.screenshotProblems(try await Tool.pixels(ofPNG: textOnlyPNG))
        #expect(textOnly.count == 1 && textOnly.first?.contains("no colour photo") == true, "without its thumbnails: \(textOnly)")
    }

    /// What is wrong with a screenshot of the report (nothing when it looks drawn): under 2 %
    /// of it inked (the fixture's report about 8 %, without its thumbnails 4 %, a blank page 0),
    /// or no colour photo where the thumbnails are: fewer than 40 squares of 16 pixels in colour
    /// (one 160-pixel thumbnail fills about 60; the fixtures are real photos, and the report's
    /// first screen holds about 160 such squares, without its thumbnails 1), or none of them
    /// inside a 3 × 3 block of colour (a picture, not coloured text: links and warnings never
    /// fill one).
    static func screenshotProblems(_ image: ColorImage) -> [String] {
        var problems: [String] = []
        let inked = image.inkedFraction
        if inked < 0.02 { problems.append("\(Int(inked * 10_000)) in 10,000 pixels inked, under 2 %") }
        let cells = image.colourCells()
        let inside = cells.filter { cell in
            (-1...1).allSatisfy { dx in (-1...1).allSatisfy { dy in cells.contains(.init(column: cell.column + dx, row: cell.row + dy)) } }
        }
        if cells.count < 40 || inside.isEmpty {
            let columns = cells.map(\.column), rows = cells.map(\.row)
            let region = cells.isEmpty ? "nowhere" : "columns \(columns.min()!)…\(columns.max()!), rows \(rows.min()!)…\(rows.max()!)"
            problems.append("no colour photo is drawn: \(cells.count) squares in colour (\(region)), \(inside.count) inside a block; 40 and 1 wanted")
        }
        return problems
    }

    @Test func htmlWithoutOriginalsStillLinksThePDFReceipt() async throws {
        let fixture = try await ClaimFixture()
        defer { fixture.shutdown() }
        let (folder, summary, _) = try await fixture.write(.html, "claim")
        let html = try String(contentsOfFile: folder + "/index.html", encoding: .utf8)
        #expect(summary.originals == 1)
        let links = Self.values(of: "href", in: html).filter { !$0.hasPrefix("#") }
        #expect(links.count == 1 && links[0].hasPrefix("originals/") && links[0].hasSuffix(".pdf"), "\(links)")
        #expect(FileManager.default.fileExists(atPath: folder + "/" + links[0]))
        #expect(Self.values(of: "src", in: html).count == 7)
    }

    @Test func htmlEscapesEveryCharacterThatMeansSomething() {
        #expect(HTMLText.escaped("a & b < c > d \" e ' f") == "a &amp; b &lt; c &gt; d &quot; e &#39; f")
        #expect(HTMLText.escaped("Холодильник 東京") == "Холодильник 東京")
        #expect(HTMLText.href("thumbs/a b.jpg") == "thumbs/a%20b.jpg")
    }
}
