import Foundation
import Testing

@testable import PDF

@Suite struct PDFFontTests {
    @Test func subsetFontIsEmbeddedAndAFewLinesMakeASmallFile() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("small.pdf")
        let document = try PDFDocument(path: path, info: PDFDocumentInfo(title: "Small"))
        let font = PDFFontChain(try TestFonts.dejaVu())
        let page = document.beginPage()
        let paragraph = """
            Crème brûlée ø ß: the refrigerator in the kitchen stopped after the fire. \
            Холодильник на кухне перестал работать после пожара. \
            Το ψυγείο στην κουζίνα σταμάτησε μετά τη φωτιά.
            """
        page.drawParagraph(paragraph, top: PDFPoint(x: 72, y: 72), width: 451, font: font, size: 11)
        try document.endPage()
        try document.finish()

        try Tool.checkStructure(of: path)
        let fonts = try Tool.run("pdffonts", [path]).text.split(separator: "\n").dropFirst(2)
        #expect(fonts.count == 1)
        let fields = fonts.first?.split(separator: " ", omittingEmptySubsequences: true).map(String.init) ?? []
        // name, type "CID TrueType", encoding, emb, sub, uni, object, generation
        #expect(fields.first?.hasSuffix("+DejaVuSans") == true && fields.first?.count == 17, "\(fields)")
        #expect(fields.dropFirst().prefix(6) == ["CID", "TrueType", "Identity-H", "yes", "yes", "yes"], "\(fields)")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(size < 60_000, "\(size) bytes")
        let text = try Tool.text(of: path).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text == paragraph.split(whereSeparator: \.isWhitespace).joined(separator: " "))
        #expect(try Tool.render(path, page: 1).inkedPixels > 500)
        #expect(document.missingCharacters.isEmpty)
    }

    @Test func cjkMissingFromDejaVuIsDrawnAsReplacementAndListed() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("cjk.pdf")
        let document = try PDFDocument(path: path)
        let font = PDFFontChain(try TestFonts.dejaVu())
        let page = document.beginPage()
        let width = page.drawText("Fridge: 東京の冷蔵庫", at: PDFPoint(x: 72, y: 72), font: font, size: 12)
        try document.endPage()
        try document.finish()

        #expect(document.missingCharacters == Set("東京の冷蔵庫".unicodeScalars))
        // Each missing character takes the replacement's width, so the line is as wide as drawn.
        #expect(abs(width - font.width(of: "Fridge: \u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}", size: 12)) < 0.001)
        let text = try Tool.text(of: path)
        #expect(text.contains("Fridge: \u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}"), "\(text)")
        #expect(!text.contains("東"))
        try Tool.checkStructure(of: path)
    }

    /// A font for CJK after DejaVu, when this machine has a TrueType one (Debian's
    /// fonts-noto-cjk and fonts-arphic are collections or CFF, which are refused); without one
    /// the chain is shown to reject what it cannot load.
    @Test func aChainWithACJKFontDrawsCJKWhenOneIsInstalled() throws {
        let candidates = [
            "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf", "/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf",
            "/usr/share/fonts/truetype/fonts-japanese-gothic.ttf", "/usr/share/fonts/truetype/unifont/unifont.ttf",
        ]
        guard let cjkPath = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            // No CJK TrueType font here: a collection is refused by name, not misread.
            for collection in ["/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "/usr/share/fonts/truetype/arphic/uming.ttc"]
            where FileManager.default.fileExists(atPath: collection) {
                let error = #expect(throws: PDFError.self) { try PDFFont.trueType(path: collection) }
                #expect(error?.kind == .invalidFont)
            }
            return
        }
        let folder = try TemporaryFolder()
        let path = folder.path("cjk-chain.pdf")
        let document = try PDFDocument(path: path)
        let chain = PDFFontChain([try TestFonts.dejaVu(), try PDFFont.trueType(path: cjkPath)])
        document.beginPage().drawText("Fridge: 東京の冷蔵庫", at: PDFPoint(x: 72, y: 72), font: chain, size: 12)
        try document.endPage()
        try document.finish()
        #expect(document.missingCharacters.isEmpty)
        #expect(try Tool.text(of: path).contains("Fridge: 東京の冷蔵庫"))
        #expect(try Tool.run("pdffonts", [path]).text.split(separator: "\n").count == 4)
    }

    @Test func helveticaFallbackDrawsWinAnsiAndReportsTheRestMissing() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("helvetica.pdf")
        let document = try PDFDocument(path: path)
        let font = PDFFontChain([.helvetica(), .helvetica(bold: true)])
        let page = document.beginPage()
        page.drawText("Crème brûlée ø ß — “Œuvre” €12…", at: PDFPoint(x: 72, y: 72), font: font, size: 12)
        page.drawText("Холод 東京", at: PDFPoint(x: 72, y: 100), font: PDFFontChain(.helvetica(bold: true)), size: 12)
        try document.endPage()
        try document.finish()

        try Tool.checkStructure(of: path)
        let text = try Tool.text(of: path)
        #expect(text.contains("Crème brûlée ø ß — “Œuvre” €12…"), "\(text)")
        #expect(text.contains("????? ??"), "\(text)")
        #expect(document.missingCharacters == Set("Холод東京".unicodeScalars))
        let fonts = try Tool.run("pdffonts", [path]).text
        #expect(fonts.contains("Helvetica ") && fonts.contains("Helvetica-Bold"))
        #expect(!fonts.contains(" yes "), "standard fonts are not embedded: \(fonts)")
        #expect(try Tool.render(path, page: 1).inkedPixels > 100)
    }

    @Test func helveticaWidthsAreAdobesAFMWidths() {
        // H e l l o: 722 556 222 222 556 thousandths in Helvetica; 722 556 278 278 611 in Bold.
        #expect(abs(PDFFont.helvetica().width(of: "Hello", size: 10) - 22.78) < 1e-9)
        #expect(abs(PDFFont.helvetica(bold: true).width(of: "Hello", size: 10) - 24.45) < 1e-9)
        // € is 0x80 in WinAnsi, 556 wide; a missing character is measured as "?" (556).
        #expect(abs(PDFFont.helvetica().width(of: "€Ж", size: 1) - 1.112) < 1e-9)
        #expect(PDFFont.helvetica().hasGlyph(for: "ÿ") && !PDFFont.helvetica().hasGlyph(for: "Ж"))
    }

    @Test func systemDefaultIsDejaVuWhenInstalled() throws {
        _ = try TestFonts.dejaVu()
        #expect(PDFFont.systemDefault().name == "DejaVuSans")
        #expect(PDFFont.systemDefault(bold: true).name == "DejaVuSans-Bold")
        #expect(PDFFont.systemDefault().isEmbedded)
        #expect(!PDFFont.helvetica().isEmbedded)
    }

    @Test func fontFilesThatCannotBeUsedAreRefusedByName() throws {
        let folder = try TemporaryFolder()
        let missing = folder.path("none.ttf")
        let notFound = #expect(throws: PDFError.self) { try PDFFont.trueType(path: missing) }
        #expect(notFound?.kind == .cannotReadFont(errno: ENOENT))
        #expect(notFound?.message == "cannot read font \(missing): No such file or directory (errno 2)")

        let jpeg = folder.path("photo.ttf")
        _ = FileManager.default.createFile(atPath: jpeg, contents: Data(try Fixtures.bytes("pillow/hopper.jpg")))
        let notFont = #expect(throws: PDFError.self) { try PDFFont.trueType(path: jpeg) }
        #expect(notFont?.kind == .invalidFont)
        #expect(notFont?.message.contains("is not a TrueType font (it starts FFD8FFE0)") == true, "\(notFont?.message ?? "")")

        // A real font cut short: its tables run past the end.
        let dejaVu = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
        let cut = folder.path("cut.ttf")
        _ = FileManager.default.createFile(atPath: cut, contents: dejaVu.prefix(100_000))
        let damaged = #expect(throws: PDFError.self) { try PDFFont.trueType(path: cut) }
        #expect(damaged?.kind == .invalidFont)
        #expect(damaged?.message.contains("runs past the end of the 100000-byte file") == true, "\(damaged?.message ?? "")")
    }

    /// Subsetting by emptying keeps glyph IDs, keeps the outlines of used glyphs and of the
    /// components of used composite glyphs, and empties the rest.
    @Test func subsetKeepsUsedGlyphsAndCompositeComponentsWithTheirIDs() throws {
        let path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
        _ = try TestFonts.dejaVu()
        let font = try TrueTypeFont(data: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), path: path)
        let composite = try #require(
            "ÅǺḉ".unicodeScalars.compactMap { font.glyph(for: $0) }.first { !font.components(of: $0).isEmpty })
        let components = font.components(of: composite)
        let a = try #require(font.glyph(for: "a"))
        let unused = try #require(font.glyph(for: "z"))
        #expect(!components.contains(unused) && unused < composite)

        let subset = font.subset(keeping: [a, composite])
        let reread = try TrueTypeFont(data: subset, path: "subset")
        #expect(reread.glyphCount == Int(max(a, composite, components.max()!)) + 1)
        for glyph in [0, a, composite] + components {
            #expect(reread.outline(of: glyph).map { Array(subset[$0]) } == font.outline(of: glyph).map { Array(font.data[$0]) })
            #expect(reread.advance(of: glyph) == font.advance(of: glyph))
        }
        #expect(reread.outline(of: unused)?.isEmpty == true)
        #expect(subset.count < 40_000, "\(subset.count) bytes")
    }

    @Test func subsetTablesHaveValidChecksums() throws {
        _ = try TestFonts.dejaVu()
        let path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
        let font = try TrueTypeFont(data: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), path: path)
        let subset = font.subset(keeping: Set("Холодильник".unicodeScalars.compactMap { font.glyph(for: $0) }))
        func sum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var total: UInt32 = 0
            var index = bytes.startIndex
            while index < bytes.endIndex {
                var word: UInt32 = 0
                for offset in 0..<4 { word = word << 8 | UInt32(index + offset < bytes.endIndex ? bytes[index + offset] : 0) }
                total = total &+ word
                index += 4
            }
            return total
        }
        let reader = ByteReader(subset)
        let tables = reader.u16(4)
        for table in 0..<tables {
            let record = 12 + table * 16
            let tag = String(decoding: subset[record..<record + 4], as: UTF8.self)
            let offset = reader.u32(record + 8), length = reader.u32(record + 12)
            #expect(offset % 4 == 0, "\(tag)")
            var bytes = subset[offset..<offset + length]
            if tag == "head" { bytes[offset + 8..<offset + 12] = [0, 0, 0, 0] }
            #expect(sum(bytes) == UInt32(reader.u32(record + 4)), "\(tag) checksum")
        }
        #expect(sum(subset[...]) == 0xB1B0_AFBA)
    }
}

@Suite struct PDFTextLayoutTests {
    let font = PDFFontChain(PDFFont.helvetica())

    @Test func wrappedLinesFitAndKeepEveryWord() {
        let text = "The refrigerator in the kitchen stopped working after the fire on the third of March."
        let lines = font.wrapped(text, size: 12, width: 150)
        #expect(lines.count > 2)
        for line in lines { #expect(font.width(of: line, size: 12) <= 150, "\(line)") }
        #expect(lines.joined(separator: " ") == text)
        // Each line is as full as it can be: the next word would not have fitted.
        for (line, next) in zip(lines, lines.dropFirst()) {
            let word = next.split(separator: " ").first.map(String.init) ?? ""
            #expect(font.width(of: line + " " + word, size: 12) > 150)
        }
    }

    @Test func overLongWordsAreBrokenAndLineBreaksKept() {
        let lines = font.wrapped("Serial: ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n\nEnd", size: 10, width: 60)
        #expect(lines.first == "Serial:")
        let pieces = Array(lines.dropFirst().prefix { !$0.isEmpty })
        #expect(pieces.count > 1)
        #expect(pieces.joined() == "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for piece in pieces { #expect(font.width(of: piece, size: 10) <= 60) }
        #expect(lines.suffix(2) == ["", "End"])
    }

    @Test func cjkWithoutSpacesWrapsBetweenCharacters() throws {
        let chain = PDFFontChain(try TestFonts.dejaVu())
        // DejaVu lacks CJK: each character is measured as the replacement, and still wraps.
        let lines = chain.wrapped("東京の冷蔵庫東京の冷蔵庫", size: 10, width: 40)
        #expect(lines.count > 1)
        #expect(lines.joined() == "東京の冷蔵庫東京の冷蔵庫")
    }

    @Test func truncatedEndsWithAnEllipsisAndFits() {
        let text = "A very long description of a sofa bought in 2019"
        let cut = font.truncated(text, size: 10, width: 100)
        #expect(cut.hasSuffix("…"))
        #expect(font.width(of: cut, size: 10) <= 100)
        #expect(text.hasPrefix(String(cut.dropLast())))
        #expect(font.truncated("Sofa", size: 10, width: 100) == "Sofa")
        #expect(font.truncated(text, size: 10, width: 5) == "")
    }

    @Test func widthsAreWhatIsDrawn() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("width.pdf")
        let document = try PDFDocument(path: path)
        let chain = PDFFontChain(try TestFonts.dejaVu())
        let drawn = document.beginPage().drawText("Холодильник", at: PDFPoint(x: 100, y: 100), font: chain, size: 20)
        try document.endPage()
        try document.finish()
        #expect(drawn == chain.width(of: "Холодильник", size: 20))
        let boxes = try Tool.run("pdftotext", ["-bbox", path, "-"]).text
        let word = try #require(boxes.split(separator: "\n").first { $0.contains(">Холодильник<") })
        func attribute(_ name: String) -> Double? {
            guard let range = word.range(of: "\(name)=\"") else { return nil }
            return Double(word[range.upperBound...].prefix { $0 != "\"" })
        }
        let xMin = try #require(attribute("xMin")), xMax = try #require(attribute("xMax"))
        #expect(abs(xMin - 100) < 0.5 && abs(xMax - xMin - drawn) < 0.5, "\(word) vs \(drawn)")
    }

    @Test func controlCharactersAndInvisiblesAreNotDrawnAsMissing() {
        let layout = font.layout("a\tb\nc\u{200D}d\u{FE0F}e\u{0007}")
        #expect(layout.missing.isEmpty)
        #expect(layout.runs.flatMap(\.scalars) == ["a", " ", "b", " ", "c", "d", "e"])
    }
}
