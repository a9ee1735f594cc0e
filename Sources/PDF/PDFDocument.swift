import Foundation

/// A PDF 1.7 file written as it is made, in flat memory: an image is written when it is
/// added, a page when it ends; until `finish()` the document keeps only each object's offset,
/// the list of pages, the glyphs used of each font, and the few words of any page-count text.
/// `finish()` writes the fonts (TrueType ones as subsets), the page tree, the catalog, the
/// Info dictionary and the cross-reference table.
///
/// ```swift
/// let document = try PDFDocument(path: "/tmp/claim.pdf", info: PDFDocumentInfo(title: "Claim"))
/// let font = PDFFontChain.systemDefault()
/// let photo = try document.addJPEG(jpegBytes)
/// let page = document.beginPage(size: .a4)
/// page.drawText("Kitchen", at: PDFPoint(x: 72, y: 90), font: font, size: 18)
/// page.drawImage(photo, in: photo.fit(into: PDFRect(x: 72, y: 110, width: 200, height: 150)))
/// page.drawTextWithPageCount(before: "Page \(page.number) of ", at: PDFPoint(x: 523, y: 800), font: font, size: 9, alignment: .right)
/// try document.endPage()
/// try document.finish()
/// ```
///
/// One page is drawn at a time; images may be added while a page is open and drawn on it or
/// any later page. A document abandoned before `finish()` leaves an incomplete file. After a
/// write error every later write reports the same error.
public final class PDFDocument {
    /// The metadata written by `finish()`; may be changed until then.
    public var info: PDFDocumentInfo
    /// Characters drawn on a page that no font in their chain had, drawn as "�" or "?" instead:
    /// for a report to list, or to choose another font. Page-count text adds to it in `finish()`.
    public private(set) var missingCharacters: Set<Unicode.Scalar> = []
    /// Pages ended so far.
    public var pageCount: Int { pageObjects.count }

    private let output: PDFOutput
    /// Tells this document's pages and images from another's.
    let documentID = UInt64.random(in: 1...UInt64.max)
    /// Offset of each object by number; 0 for number 0 (the free-list head) and for objects
    /// numbered but not written yet.
    private var offsets: [Int] = [0]
    private var pageObjects: [Int] = []
    private var currentPage: PDFPage?
    private var fonts: [FontUsage] = []
    private var fontIndex: [ObjectIdentifier: Int] = [:]
    /// Page-count texts to write as form XObjects in `finish()`.
    private var pageCountTexts: [(objectNumber: Int, text: PDFPage.PageCountText)] = []
    private var finished = false
    private let catalogObject: Int
    private let pageTreeObject: Int
    private let infoObject: Int

    /// A font used in the document: the object pages refer to and the glyphs drawn in it.
    struct FontUsage {
        let font: PDFFont
        let objectNumber: Int
        var glyphs: [UInt16: Unicode.Scalar] = [:]
    }

    /// Creates (or replaces) the PDF file at `path` and writes its header.
    ///
    /// - Throws: `PDFError` `.cannotCreate` naming the path and the system's reason.
    public convenience init(path: String, info: PDFDocumentInfo = PDFDocumentInfo()) throws(PDFError) {
        try self.init(output: try PDFOutput(path: path), info: info)
    }

    /// Writes the PDF to `fileHandle` from its current position, leaving it open: for a pipe
    /// or socket as well as a file, since nothing is read back or seeked.
    public convenience init(fileHandle: FileHandle, info: PDFDocumentInfo = PDFDocumentInfo()) throws(PDFError) {
        try self.init(output: PDFOutput(handle: fileHandle), info: info)
    }

    private init(output: PDFOutput, info: PDFDocumentInfo) throws(PDFError) {
        self.output = output
        self.info = info
        offsets.reserveCapacity(1024)
        catalogObject = 1
        pageTreeObject = 2
        infoObject = 3
        offsets += [0, 0, 0]
        // The comment's bytes above 127 mark the file as binary for tools that guess.
        try output.write("%PDF-1.7\n")
        try output.write(bytes: [0x25, 0xE2, 0xE3, 0xCF, 0xD3, 0x0A])
    }

    // MARK: Memory

    /// Bytes held for the document's bookkeeping: object offsets, pages, glyph records and
    /// page-count texts. Grows by a few dozen bytes a page, whatever is drawn.
    var bookkeepingByteCount: Int {
        offsets.capacity * 8 + pageObjects.capacity * 8 + fonts.reduce(0) { $0 + 64 + $1.glyphs.count * 8 }
            + pageCountTexts.reduce(0) { $0 + 72 + $1.text.before.utf8.count + $1.text.after.utf8.count }
    }

    /// Bytes held that are waiting to be written: the output buffer and the open page.
    var bufferedByteCount: Int { output.bufferedByteCount + (currentPage?.bufferedByteCount ?? 0) }

    // MARK: Images

    /// Embeds the JPEG `bytes` unchanged, writing them to the file now, and returns the image
    /// for pages to draw. Baseline and progressive 8-bit JPEGs in grey, RGB (YCbCr) or CMYK
    /// (YCCK) are taken; Adobe's inverted CMYK is marked so it is not shown as a negative.
    ///
    /// - Throws: `PDFError` `.invalidJPEG` (empty, not a JPEG, cut short, zero-sized) or
    ///   `.unsupportedJPEG` (12-bit, lossless, arithmetic-coded), saying what was wrong and
    ///   where; `.writeFailed` when the file cannot be written.
    public func addJPEG(_ bytes: some Collection<UInt8>) throws(PDFError) -> PDFImage {
        checkNotFinished("addJPEG")
        let data = Array(bytes)
        let header = try JPEGHeader.parse(data)
        let number = newObject()
        try beginObject(number)
        try output.write(PDFImage.dictionary(for: header, length: data.count) + "\nstream\n")
        try output.write(bytes: data)
        try output.write("\nendstream\nendobj\n")
        // Straight to the file: image data is never held past this call.
        try output.flush()
        return PDFImage(header: header, objectNumber: number, documentID: documentID)
    }

    // MARK: Pages

    /// Starts a page of `size`; the previous one must have ended.
    public func beginPage(size: PDFPageSize = .a4) -> PDFPage {
        checkNotFinished("beginPage")
        precondition(currentPage == nil, "PDFDocument.beginPage: page \(pageCount + 1) has not ended (call endPage() first)")
        let page = PDFPage(size: size, number: pageCount + 1, documentID: documentID)
        currentPage = page
        return page
    }

    /// Writes the current page (its content stream and page object) and forgets its content.
    ///
    /// - Throws: `PDFError` `.writeFailed` when the file cannot be written.
    public func endPage() throws(PDFError) {
        checkNotFinished("endPage")
        guard let page = currentPage else { preconditionFailure("PDFDocument.endPage: no page has begun") }
        page.hasEnded = true
        currentPage = nil
        missingCharacters.formUnion(page.content.missing)

        let contentObject = newObject()
        try writeStream(contentObject, dictionary: "", bytes: page.content.bytes)

        var fontResources = page.content.fonts.map { "\($0.name) \(usage(of: $0.font, glyphs: $0.glyphs)) 0 R" }
        var xObjects = page.images.sorted().map { "/Im\($0) \($0) 0 R" }
        for text in page.pageCountTexts {
            let number = newObject()
            pageCountTexts.append((number, text))
            xObjects.append("\(text.name) \(number) 0 R")
        }
        fontResources.sort()
        var resources = ""
        if !fontResources.isEmpty { resources += " /Font << \(fontResources.joined(separator: " ")) >>" }
        if !xObjects.isEmpty { resources += " /XObject << \(xObjects.joined(separator: " ")) >>" }

        let pageObject = newObject()
        try beginObject(pageObject)
        try output.write(
            "<< /Type /Page /Parent \(pageTreeObject) 0 R /MediaBox [0 0 \(PDFSyntax.number(page.size.width)) \(PDFSyntax.number(page.size.height))]"
                + " /Resources <<\(resources) >> /Contents \(contentObject) 0 R >>\nendobj\n")
        pageObjects.append(pageObject)
    }

    // MARK: Objects

    /// Numbers a new object, to be written later.
    func newObject() -> Int {
        offsets.append(0)
        return offsets.count - 1
    }

    /// Records that object `number` starts here and writes its first line.
    func beginObject(_ number: Int) throws(PDFError) {
        precondition(offsets[number] == 0, "PDF object \(number) written twice")
        offsets[number] = output.offset
        try output.write("\(number) 0 obj\n")
    }

    /// Writes object `number` as a stream of `bytes`; `dictionary` holds its entries other than
    /// /Length (" /Filter …"), each starting with a space.
    func writeStream(_ number: Int, dictionary: String, bytes: [UInt8]) throws(PDFError) {
        try beginObject(number)
        try output.write("<<\(dictionary) /Length \(bytes.count) >>\nstream\n")
        try output.write(bytes: bytes)
        try output.write("\nendstream\nendobj\n")
    }

    /// Writes object `number` with `body` (a dictionary, array or value).
    func writeObject(_ number: Int, _ body: String) throws(PDFError) {
        try beginObject(number)
        try output.write(body + "\nendobj\n")
    }

    /// The object number of `font`'s dictionary, adding `glyphs` to those it embeds.
    func usage(of font: PDFFont, glyphs: [UInt16: Unicode.Scalar]) -> Int {
        let index: Int
        if let known = fontIndex[ObjectIdentifier(font)] {
            index = known
        } else {
            fonts.append(FontUsage(font: font, objectNumber: newObject()))
            index = fonts.count - 1
            fontIndex[ObjectIdentifier(font)] = index
        }
        fonts[index].glyphs.merge(glyphs) { first, _ in first }
        return fonts[index].objectNumber
    }

    private func checkNotFinished(_ operation: String) {
        precondition(!finished, "PDFDocument.\(operation) called after finish()")
    }

    // MARK: Finishing

    /// Writes what only the end knows — page-count texts, fonts, page tree, catalog, Info
    /// dictionary, cross-reference table, trailer — and closes a file the document opened.
    /// Calling it twice, or with a page not ended, is a programming error.
    ///
    /// - Throws: `PDFError` `.writeFailed` when the file cannot be written.
    public func finish() throws(PDFError) {
        checkNotFinished("finish")
        precondition(currentPage == nil, "PDFDocument.finish: page \(pageCount + 1) has not ended (call endPage() first)")
        finished = true
        try writePageCountTexts()
        for font in fonts { try writeFont(font) }

        try beginObject(pageTreeObject)
        try output.write("<< /Type /Pages /Count \(pageObjects.count) /Kids [")
        for (index, page) in pageObjects.enumerated() {
            try output.write((index % 16 == 0 ? "\n" : " ") + "\(page) 0 R")
        }
        try output.write(" ] >>\nendobj\n")
        try writeObject(catalogObject, "<< /Type /Catalog /Pages \(pageTreeObject) 0 R /ViewerPreferences << /DisplayDocTitle true >> >>")
        try writeObject(infoObject, info.dictionary)

        let crossReference = output.offset
        try output.write("xref\n0 \(offsets.count)\n0000000000 65535 f\r\n")
        for number in 1..<offsets.count {
            precondition(offsets[number] > 0, "PDF object \(number) was numbered but never written")
            let digits = String(offsets[number])
            try output.write(String(repeating: "0", count: max(0, 10 - digits.count)) + digits + " 00000 n\r\n")
        }
        var random = SystemRandomNumberGenerator()
        let id = PDFSyntax.hex((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) })
        try output.write(
            "trailer\n<< /Size \(offsets.count) /Root \(catalogObject) 0 R /Info \(infoObject) 0 R /ID [<\(id)> <\(id)>] >>\n"
                + "startxref\n\(crossReference)\n%%EOF\n")
        try output.close()
    }

    /// Each page-count text as a form XObject whose origin is the point the page drew it at.
    private func writePageCountTexts() throws(PDFError) {
        let total = String(pageObjects.count)
        for (number, text) in pageCountTexts {
            let layout = text.font.layout(text.before + total + text.after)
            let width = Double(layout.width) * text.size / 1000
            let x = -text.alignment.offset(forWidth: width)
            var content = PDFContent()
            content.append("\(text.color.fillOperator) ")
            content.appendText(layout, font: text.font, size: text.size, x: x, y: 0)
            missingCharacters.formUnion(content.missing)
            let fontResources = content.fonts.map { "\($0.name) \(usage(of: $0.font, glyphs: $0.glyphs)) 0 R" }
            // Glyphs may reach past their advance and well above and below the baseline.
            let box = [x - text.size, -text.size, x + width + text.size, text.size * 2].map(PDFSyntax.number).joined(separator: " ")
            try writeStream(
                number, dictionary: " /Type /XObject /Subtype /Form /BBox [\(box)] /Resources << /Font << \(fontResources.joined(separator: " ")) >> >>",
                bytes: content.bytes)
        }
        pageCountTexts = []
    }
}
