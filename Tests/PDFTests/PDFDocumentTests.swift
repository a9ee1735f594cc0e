import Foundation
import Testing

@testable import PDF

@Suite struct PDFDocumentTests {
    @Test func writtenFilePassesQPDFAndPdfinfoReportsPagesAndMetadata() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("claim.pdf")
        let info = PDFDocumentInfo(title: "Claim packet — Küche", author: "Ada Lovelace", subject: "Fire, 3 March")
        let document = try PDFDocument(path: path, info: info)
        let font = PDFFontChain(try TestFonts.dejaVu())
        for size in [PDFPageSize.a4, .usLetter, PDFPageSize.a4.landscape] {
            let page = document.beginPage(size: size)
            page.drawText("Page \(page.number)", at: PDFPoint(x: 72, y: 72), font: font, size: 12)
            try document.endPage()
        }
        #expect(document.pageCount == 3)
        try document.finish()

        try Tool.checkStructure(of: path)
        let fields = try Tool.info(of: path)
        #expect(fields["Pages"] == "3")
        #expect(fields["Title"] == "Claim packet — Küche")
        #expect(fields["Author"] == "Ada Lovelace")
        #expect(fields["Subject"] == "Fire, 3 March")
        #expect(fields["Producer"] == "Homepwner")
        #expect(fields["PDF version"] == "1.7")
        #expect(fields["CreationDate"]?.isEmpty == false)
        #expect(fields["Page size"]?.hasPrefix("595.276 x 841.89") == true)

        // The header, then a comment of bytes above 127 that marks the file as binary.
        let head = try Array(Data(contentsOf: URL(fileURLWithPath: path)).prefix(15))
        #expect(head.starts(with: Array("%PDF-1.7\n%".utf8)))
        #expect(head[10...13].allSatisfy { $0 >= 128 })
    }

    @Test func pdftotextFindsLatinCyrillicGreekAndThePageTotals() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("scripts.pdf")
        let document = try PDFDocument(path: path, info: PDFDocumentInfo(title: "Scripts"))
        let font = PDFFontChain(try TestFonts.dejaVu())
        let lines = ["Crème brûlée ø ß", "Холодильник", "Ψυγείο στην κουζίνα", "Œuvre “quoted” – €12"]
        for number in 1...3 {
            let page = document.beginPage()
            for (index, line) in lines.enumerated() {
                page.drawText(line, at: PDFPoint(x: 72, y: 100 + Double(index) * 20), font: font, size: 12)
            }
            page.drawTextWithPageCount(
                before: "Page \(number) of ", after: " pages", at: PDFPoint(x: 523, y: 800), font: font, size: 9, alignment: .right)
            try document.endPage()
        }
        try document.finish()

        try Tool.checkStructure(of: path)
        let text = try Tool.text(of: path)
        for line in lines { #expect(text.contains(line), "\(line) not in: \(text)") }
        for number in 1...3 { #expect(text.contains("Page \(number) of 3 pages"), "page total \(number) not in: \(text)") }
        #expect(document.missingCharacters.isEmpty)
    }

    @Test func pageCountTextIsPlacedByItsAlignment() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("totals.pdf")
        let document = try PDFDocument(path: path)
        let font = PDFFontChain(try TestFonts.dejaVu())
        let page = document.beginPage(size: PDFPageSize(width: 400, height: 100))
        // Right-aligned at the right edge's inside, centred in the middle: both must stay on the page.
        page.drawTextWithPageCount(before: "Right ", at: PDFPoint(x: 390, y: 40), font: font, size: 20, alignment: .right)
        page.drawTextWithPageCount(before: "Left ", at: PDFPoint(x: 10, y: 80), font: font, size: 20)
        try document.endPage()
        try document.finish()

        // pdftotext -bbox gives each word's box: "1" after "Right" ends at x 390.
        let boxes = try Tool.run("pdftotext", ["-bbox", path, "-"]).text
        let words = boxes.split(separator: "\n").filter { $0.contains("<word") }
        let ones = words.filter { $0.hasSuffix(">1</word>") }
        #expect(ones.count == 2, "\(boxes)")
        let xMax = ones.compactMap { line -> Double? in
            guard let range = line.range(of: "xMax=\"") else { return nil }
            return Double(line[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(xMax.contains { abs($0 - 390) < 1 }, "\(ones)")
        #expect(xMax.allSatisfy { $0 <= 400 }, "\(ones)")
    }

    @Test func pagesRenderWithInkAndABlankPageRendersBlank() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("render.pdf")
        let document = try PDFDocument(path: path)
        let font = PDFFontChain(try TestFonts.dejaVu())
        let text = document.beginPage()
        text.drawText("Холодильник Crème brûlée", at: PDFPoint(x: 72, y: 100), font: font, size: 24)
        try document.endPage()
        let shapes = document.beginPage()
        shapes.fillRect(PDFRect(x: 100, y: 100, width: 200, height: 100), color: .rgb(0.2, 0.4, 0.8))
        shapes.strokeRect(PDFRect(x: 100, y: 300, width: 200, height: 100), lineWidth: 4)
        shapes.drawLine(from: PDFPoint(x: 50, y: 500), to: PDFPoint(x: 500, y: 500), width: 4)
        try document.endPage()
        _ = document.beginPage()
        try document.endPage()
        try document.finish()

        let textPage = try Tool.render(path, page: 1)
        let shapePage = try Tool.render(path, page: 2)
        let blankPage = try Tool.render(path, page: 3)
        #expect(textPage.inkedPixels > 100, "text drew \(textPage.inkedPixels) pixels")
        // The filled 200 × 100 pt box alone is about 83 × 42 pixels at 30 dpi.
        #expect(shapePage.inkedPixels > 3000, "shapes drew \(shapePage.inkedPixels) pixels")
        #expect(blankPage.inkedPixels == 0)
    }

    @Test func textIsPlacedFromTheTopLeftCorner() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("origin.pdf")
        let document = try PDFDocument(path: path)
        let page = document.beginPage(size: PDFPageSize(width: 720, height: 720))
        // A black square in the top-left tenth of the page: 30 dpi renders 10 × 10 inches as 300 × 300.
        page.fillRect(PDFRect(x: 0, y: 0, width: 72, height: 72), color: .black)
        try document.endPage()
        try document.finish()

        let image = try Tool.render(path, page: 1)
        #expect(image.width == 300 && image.height == 300)
        #expect(image.pixels[5 * 300 + 5] < 50, "top-left should be black")
        #expect(image.pixels[295 * 300 + 5] > 200, "bottom-left should be white")
        #expect(image.inkedPixels >= 28 * 28 && image.inkedPixels <= 32 * 32)
    }

    @Test func writesToAFileHandleItDoesNotOwn() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("handle.pdf")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        let document = try PDFDocument(fileHandle: handle, info: PDFDocumentInfo(title: "Handle"))
        document.beginPage().drawText("Written through a FileHandle", at: PDFPoint(x: 72, y: 72), font: PDFFontChain(.helvetica()), size: 12)
        try document.endPage()
        try document.finish()
        // Still open: the caller closes it.
        try handle.write(contentsOf: Data())
        try handle.close()

        try Tool.checkStructure(of: path)
        #expect(try Tool.text(of: path).contains("Written through a FileHandle"))
    }

    @Test func unwritablePathThrowsNamingThePathAndTheReason() throws {
        let folder = try TemporaryFolder()
        let missing = folder.path("no-such-folder/claim.pdf")
        #expect {
            _ = try PDFDocument(path: missing)
        } throws: { error in
            guard let error = error as? PDFError else { return false }
            return error.kind == .cannotCreate(errno: ENOENT) && error.message.contains(missing)
                && error.message.contains("No such file or directory")
        }
        // A regular file where a folder should be: refused even for root.
        let file = folder.path("plain-file")
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        #expect {
            _ = try PDFDocument(path: file + "/claim.pdf")
        } throws: { error in
            guard let error = error as? PDFError else { return false }
            return error.kind == .cannotCreate(errno: ENOTDIR) && error.message.contains(file + "/claim.pdf")
                && error.message.contains("Not a directory")
        }
    }

    @Test func finishingTwiceIsAPreconditionFailure() async {
        await #expect(processExitsWith: .failure) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("PDFTests-twice-\(UUID().uuidString).pdf").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let document = try PDFDocument(path: path)
            _ = document.beginPage()
            try document.endPage()
            try document.finish()
            try document.finish()
        }
    }

    @Test func drawingOnAnEndedPageIsAPreconditionFailure() async {
        await #expect(processExitsWith: .failure) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("PDFTests-ended-\(UUID().uuidString).pdf").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let document = try PDFDocument(path: path)
            let page = document.beginPage()
            try document.endPage()
            try document.finish()
            page.fillRect(PDFRect(x: 0, y: 0, width: 10, height: 10), color: .black)
        }
    }

    @Test func beginningAPageAfterFinishIsAPreconditionFailure() async {
        await #expect(processExitsWith: .failure) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("PDFTests-after-\(UUID().uuidString).pdf").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let document = try PDFDocument(path: path)
            try document.finish()
            _ = document.beginPage()
        }
    }

    /// 2,000 pages, each with its own photo, its text and a page-count text: what the document
    /// holds stays within its output buffer and the open page, and its bookkeeping grows by
    /// a few dozen bytes a page while the file grows by the photo's 6 KB.
    @Test func twoThousandPagesWithAPhotoEachKeepMemoryFlat() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("long.pdf")
        let photo = try Fixtures.bytes("pillow/hopper.jpg")
        let document = try PDFDocument(path: path, info: PDFDocumentInfo(title: "Long"))
        let font = PDFFontChain(try TestFonts.dejaVu())
        var mostBuffered = 0
        var firstImage: PDFImage?
        for number in 1...2000 {
            let image = try document.addJPEG(photo)
            if number == 1 {
                firstImage = image
                // Written at once, not held: the file already holds the photo.
                let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
                #expect(size > photo.count)
            }
            let page = document.beginPage()
            page.drawText("Item \(number): Холодильник", at: PDFPoint(x: 72, y: 72), font: font, size: 12)
            page.drawImage(image, in: image.fit(into: PDFRect(x: 72, y: 100, width: 300, height: 300)))
            if number == 2000, let firstImage { page.drawImage(firstImage, in: PDFRect(x: 72, y: 420, width: 100, height: 100)) }
            page.drawTextWithPageCount(before: "Page \(number) of ", at: PDFPoint(x: 523, y: 800), font: font, size: 9, alignment: .right)
            mostBuffered = max(mostBuffered, document.bufferedByteCount)
            try document.endPage()
            mostBuffered = max(mostBuffered, document.bufferedByteCount)
        }
        let bookkeeping = document.bookkeepingByteCount
        try document.finish()

        #expect(mostBuffered <= PDFOutput.bufferCapacity + 4096, "held \(mostBuffered) bytes")
        #expect(bookkeeping <= 2000 * 256, "bookkeeping \(bookkeeping) bytes for 2,000 pages")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(size > 2000 * photo.count)
        #expect(try Tool.info(of: path)["Pages"] == "2000")
        // The first photo is drawn on page 1 and again on page 2000, as the same object.
        let list = try Tool.run("pdfimages", ["-list", "-f", "2000", "-l", "2000", path]).text
        let rows = list.split(separator: "\n").dropFirst(2).map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(rows.count == 2)
        #expect(rows.contains { $0.count > 11 && $0[10] == "\(firstImage!.objectNumber)" }, "\(list)")
        #expect(try Tool.text(of: path).contains("Page 2000 of 2000"))
    }
}
