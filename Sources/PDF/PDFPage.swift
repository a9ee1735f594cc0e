/// One page being drawn, from `PDFDocument.beginPage(size:)` until `PDFDocument.endPage()`.
///
/// Coordinates are in points (1/72 inch) from the page's top-left corner, y growing
/// downwards, as on a screen; text is placed by the left end of its baseline. What is drawn
/// is kept in memory only until the page ends, when it is written to the file. Drawing on a
/// page that has ended is a programming error (a precondition failure).
public final class PDFPage {
    /// The page's size.
    public let size: PDFPageSize
    /// The page's number, counting from 1.
    public let number: Int
    /// The document the page belongs to.
    let documentID: UInt64
    /// The content stream so far, with its fonts.
    private(set) var content = PDFContent()
    /// Set when the document writes the page.
    var hasEnded = false
    /// Object numbers of the images drawn.
    private(set) var images: Set<Int> = []
    /// Text with the page count in it, drawn when the count is known.
    private(set) var pageCountTexts: [PageCountText] = []

    /// Text around the document's page count, which only `finish()` knows; drawn as a form
    /// XObject written then.
    struct PageCountText {
        let name: String
        let before: String
        let after: String
        let font: PDFFontChain
        let size: Double
        let color: PDFColor
        let alignment: PDFTextAlignment
    }

    init(size: PDFPageSize, number: Int, documentID: UInt64) {
        precondition(size.width > 0 && size.height > 0, "a page must have a positive size (got \(size.width) × \(size.height))")
        self.size = size
        self.number = number
        self.documentID = documentID
    }

    /// Bytes the page holds in memory.
    var bufferedByteCount: Int {
        content.byteCount + pageCountTexts.reduce(0) { $0 + 64 + $1.before.utf8.count + $1.after.utf8.count }
    }

    // MARK: Text

    /// Draws one line of `text` with the left end of its baseline at `point` (or its centre or
    /// right end, by `alignment`), each character in the first font of `font` that has it.
    /// Characters no font has are drawn as "�" or "?" and recorded in the document's
    /// `missingCharacters`; line breaks and tabs are drawn as spaces (wrap with
    /// `PDFFontChain.wrapped`).
    ///
    /// - Returns: The width drawn, in points.
    @discardableResult
    public func drawText(
        _ text: String, at point: PDFPoint, font: PDFFontChain, size: Double, color: PDFColor = .black,
        alignment: PDFTextAlignment = .left
    ) -> Double {
        checkOpen()
        let layout = font.layout(text)
        let width = Double(layout.width) * size / 1000
        content.append("q \(color.fillOperator) ")
        content.appendText(layout, font: font, size: size, x: point.x - alignment.offset(forWidth: width), y: self.size.height - point.y)
        content.append(" Q\n")
        return width
    }

    /// Draws `text` in a single font: `drawText(_:at:font:size:color:alignment:)` with a chain of one.
    @discardableResult
    public func drawText(
        _ text: String, at point: PDFPoint, font: PDFFont, size: Double, color: PDFColor = .black, alignment: PDFTextAlignment = .left
    ) -> Double {
        drawText(text, at: point, font: PDFFontChain(font), size: size, color: color, alignment: alignment)
    }

    /// Draws `text` wrapped to `width` points (`PDFFontChain.wrapped`), the first line's
    /// ascent touching `top.y`, lines `lineHeight` apart (1.2 × `size` by default).
    ///
    /// - Returns: The height used: the number of lines times the line height.
    @discardableResult
    public func drawParagraph(
        _ text: String, top: PDFPoint, width: Double, font: PDFFontChain, size: Double, lineHeight: Double? = nil,
        color: PDFColor = .black
    ) -> Double {
        let step = lineHeight ?? size * 1.2
        let lines = font.wrapped(text, size: size, width: width)
        var baseline = top.y + font.ascent(size: size)
        for line in lines {
            drawText(line, at: PDFPoint(x: top.x, y: baseline), font: font, size: size, color: color)
            baseline += step
        }
        return Double(lines.count) * step
    }

    /// Draws `before`, the document's page count, then `after` ("Page 3 of " + "12"), placed
    /// like `drawText`. The count is known only when the document finishes, so the text is
    /// written then, as a form XObject this page draws; viewers and `pdftotext` see it as
    /// ordinary text.
    public func drawTextWithPageCount(
        before: String, after: String = "", at point: PDFPoint, font: PDFFontChain, size: Double, color: PDFColor = .black,
        alignment: PDFTextAlignment = .left
    ) {
        checkOpen()
        let name = "/N\(pageCountTexts.count + 1)"
        pageCountTexts.append(
            PageCountText(name: name, before: before, after: after, font: font, size: size, color: color, alignment: alignment))
        append("q 1 0 0 1 \(PDFSyntax.number(point.x)) \(PDFSyntax.number(self.size.height - point.y)) cm \(name) Do Q\n")
    }

    // MARK: Shapes and images

    /// Draws a straight line from `start` to `end`, `width` points thick.
    public func drawLine(from start: PDFPoint, to end: PDFPoint, width: Double = 1, color: PDFColor = .black) {
        checkOpen()
        append(
            "q \(PDFSyntax.number(width)) w \(color.strokeOperator) \(PDFSyntax.number(start.x)) \(PDFSyntax.number(size.height - start.y)) m "
                + "\(PDFSyntax.number(end.x)) \(PDFSyntax.number(size.height - end.y)) l S Q\n")
    }

    /// Draws the outline of `rect`, `lineWidth` points thick, centred on its edges.
    public func strokeRect(_ rect: PDFRect, lineWidth: Double = 1, color: PDFColor = .black) {
        checkOpen()
        append("q \(PDFSyntax.number(lineWidth)) w \(color.strokeOperator) \(rectangle(rect)) re S Q\n")
    }

    /// Fills `rect` with `color`.
    public func fillRect(_ rect: PDFRect, color: PDFColor) {
        checkOpen()
        append("q \(color.fillOperator) \(rectangle(rect)) re f Q\n")
    }

    /// Draws `image` stretched to fill `rect`, upright as its EXIF orientation says. To keep
    /// its proportions, draw it in `image.fit(into:)` of the space you have.
    public func drawImage(_ image: PDFImage, in rect: PDFRect) {
        checkOpen()
        precondition(image.documentID == documentID, "PDFPage.drawImage: the image belongs to another document")
        images.insert(image.objectNumber)
        let matrix = image.placement(x: rect.x, y: size.height - rect.maxY, width: rect.width, height: rect.height)
        append("q \(matrix.map(PDFSyntax.number).joined(separator: " ")) cm \(image.resourceName) Do Q\n")
    }

    /// "x y width height" of `rect` in PDF coordinates (origin bottom-left).
    private func rectangle(_ rect: PDFRect) -> String {
        [rect.x, size.height - rect.maxY, rect.width, rect.height].map(PDFSyntax.number).joined(separator: " ")
    }

    private func append(_ text: String) {
        content.append(text)
    }

    private func checkOpen() {
        precondition(!hasEnded, "PDFPage \(number) was drawn on after it ended (PDFDocument.endPage() or finish())")
    }
}
