import Foundation
import PDF
import Proto

/// The claim as a PDF (A4): a cover, then a section per location with a table of its items,
/// each item's photos under it as their stored thumbnails (embedded as the service sent them,
/// once per image however many items show it) with the role as caption, documents and movies
/// listed by key and file name, a subtotal per location; then the totals by category and by
/// location, and the pages that list every original's SHA-256 and when it was received, ending
/// with the characters the font could not print. "Page N of M" on every page. Each page is
/// written when it ends: memory holds one.
final class ClaimPDFWriter: ClaimWriter {
    let document: PDFDocument
    let regular = PDFFontChain.systemDefault()
    let bold = PDFFontChain.systemDefault(bold: true)
    /// DejaVu Sans Mono for the digests when installed, else the regular font.
    let mono: PDFFontChain
    var page: PDFPage?
    /// Where the next thing is drawn, from the page's top.
    var y = 0.0
    var overview: ClaimOverview?
    /// The section being written, redrawn as a heading at the top of a continued page.
    var section: ClaimSection?
    /// Characters drawn that no font of their chain had.
    private(set) var missing: Set<Unicode.Scalar> = []
    /// The thumbnails embedded so far, by image key: the image object each is drawn from again
    /// (a photo attached to several items is in the file once). A handle per key (its object
    /// number and size), never the bytes, which are in the file already.
    private var embedded: [String: PDFImage] = [:]

    var wantsThumbnails: Bool { true }

    // MARK: Layout

    static let pageSize = PDFPageSize.a4
    let left = 42.0
    var right: Double { Self.pageSize.width - 42 }
    let top = 48.0
    var bottom: Double { Self.pageSize.height - 50 }
    var width: Double { right - left }

    /// The item table's columns: x of their left edge (text) or right edge (amounts).
    enum Column {
        static let quantityRight = 66.0
        static let description = 74.0
        static let descriptionWidth = 208.0
        static let purchased = 288.0
        static let purchasedWidth = 62.0
        static let priceRight = 417.0
        static let replacementRight = 485.0
        static let actualCashRight = 553.0
        static let amountWidth = 64.0
    }

    /// A thumbnail's tile: the box the picture fits in, and its caption below.
    enum Tile {
        static let width = 112.0
        static let imageHeight = 96.0
        static let height = 114.0
        static let gap = 8.0
        static let perRow = 4
    }

    static let grey = PDFColor.gray(0.4)
    static let rule = PDFColor.gray(0.8)

    init(path: String) throws(PDFError) {
        document = try PDFDocument(path: path, info: PDFDocumentInfo(title: "Contents inventory / claim packet"))
        let monoPath = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
        mono = (try? PDFFont.trueType(path: monoPath)).map { PDFFontChain($0) } ?? PDFFontChain.systemDefault()
    }

    /// Every character that could not be printed, by scalar value.
    var missingCharacters: [Unicode.Scalar] {
        missing.union(document.missingCharacters).filter { $0 != "\u{FFFD}" }.sorted { $0.value < $1.value }
    }

    // MARK: Drawing

    /// Draws one line, recording the characters its fonts lack.
    @discardableResult
    func text(
        _ text: String, x: Double, baseline: Double, font: PDFFontChain, size: Double, color: PDFColor = .black,
        alignment: PDFTextAlignment = .left, width: Double? = nil
    ) -> Double {
        guard let page else { return 0 }
        let shown = width.map { font.truncated(text, size: size, width: $0) } ?? text
        record(shown, font: font)
        return page.drawText(shown, at: PDFPoint(x: x, y: baseline), font: font, size: size, color: color, alignment: alignment)
    }

    /// Notes the characters of `text` that no font of `font` has (as the PDF module draws them).
    func record(_ text: String, font: PDFFontChain) {
        for scalar in text.unicodeScalars where !font.hasGlyph(for: scalar) {
            let properties = scalar.properties
            if properties.generalCategory == .control || properties.isDefaultIgnorableCodePoint || properties.isWhitespace { continue }
            missing.insert(scalar)
        }
    }

    /// Ends the page being drawn, if any, and begins the next with its footer.
    func newPage() throws {
        if page != nil { try document.endPage() }
        let next = document.beginPage(size: Self.pageSize)
        page = next
        let footer = Self.pageSize.height - 26
        next.drawLine(from: PDFPoint(x: left, y: footer - 10), to: PDFPoint(x: right, y: footer - 10), width: 0.5, color: Self.rule)
        if let overview {
            let who = overview.cover.policyholder.isEmpty ? overview.scopeName : overview.cover.policyholder + " · " + overview.scopeName
            text(
                "Contents inventory / claim packet · \(who) · values as of \(overview.asOf)", x: left, baseline: footer, font: regular,
                size: 7, color: Self.grey, width: width - 90)
        }
        next.drawTextWithPageCount(
            before: "Page \(next.number) of ", at: PDFPoint(x: right, y: footer), font: regular, size: 7, color: Self.grey, alignment: .right)
        y = top
    }

    /// Makes room for `height` points: a new page when they do not fit on this one, with the
    /// section's heading and the table's header again.
    func ensure(_ height: Double) throws {
        guard page == nil || y + height > bottom else { return }
        try newPage()
        if let section {
            text(section.name + " (continued)", x: left, baseline: y + 12, font: bold, size: 11, width: width)
            y += 20
            tableHeader()
        }
    }

    /// The item table's header row.
    func tableHeader() {
        page?.fillRect(PDFRect(x: left, y: y, width: width, height: 15), color: .gray(0.9))
        let baseline = y + 10.5
        text("Qty", x: Column.quantityRight, baseline: baseline, font: bold, size: 7.5, alignment: .right)
        text("Description", x: Column.description, baseline: baseline, font: bold, size: 7.5)
        text("Purchased", x: Column.purchased, baseline: baseline, font: bold, size: 7.5)
        text("Purchase price", x: Column.priceRight, baseline: baseline, font: bold, size: 7.5, alignment: .right)
        text("RCV", x: Column.replacementRight, baseline: baseline, font: bold, size: 7.5, alignment: .right)
        text("ACV", x: Column.actualCashRight, baseline: baseline, font: bold, size: 7.5, alignment: .right)
        y += 19
    }

    // MARK: Sections

    func beginSection(_ section: ClaimSection) throws {
        self.section = nil
        try newPage()
        self.section = section
        for line in bold.wrapped(section.name, size: 15, width: width - 90) {
            text(line, x: left, baseline: y + 15, font: bold, size: 15)
            y += 19
        }
        text(ClaimText.plural(section.itemCount, "item"), x: right, baseline: y - 4, font: regular, size: 8.5, color: Self.grey, alignment: .right)
        y += 6
        tableHeader()
    }

    /// One line of a cell: its text and look.
    struct Line {
        var text: String
        var font: PDFFontChain
        var size: Double
        var color: PDFColor = .black
        var height: Double { size * 1.28 }
    }

    func write(_ claim: ClaimItem, in section: ClaimSection) async throws {
        guard let overview else { return }
        let item = claim.item
        // The cells, each a column of lines.
        var description: [Line] = bold.wrapped(item.name, size: 9, width: Column.descriptionWidth).map { Line(text: $0, font: bold, size: 9) }
        if !claim.brandAndModel.isEmpty {
            description += regular.wrapped(claim.brandAndModel, size: 8, width: Column.descriptionWidth).map { Line(text: $0, font: regular, size: 8) }
        }
        if !item.serialNumber.isEmpty { description.append(Line(text: "S/N " + item.serialNumber, font: regular, size: 8)) }
        let meta = ([claim.categoryName] + item.tags.map { "#" + $0 }).filter { !$0.isEmpty }.joined(separator: " · ")
        if !meta.isEmpty {
            description += regular.wrapped(meta, size: 7, width: Column.descriptionWidth).prefix(2).map {
                Line(text: $0, font: regular, size: 7, color: Self.grey)
            }
        }
        if !item.notes.isEmpty {
            var notes = regular.wrapped(item.notes, size: 7, width: Column.descriptionWidth).filter { !$0.isEmpty }
            if notes.count > 4 { notes = Array(notes.prefix(4)) + ["…"] }
            description += notes.map { Line(text: $0, font: regular, size: 7, color: Self.grey) }
        }
        var purchased = [Line(text: item.purchaseDate.isEmpty ? "—" : item.purchaseDate, font: regular, size: 8)]
        let age = ClaimText.age(months: item.valuation?.ageMonths ?? -1)
        if !age.isEmpty { purchased.append(Line(text: age, font: regular, size: 7, color: Self.grey)) }
        if !item.purchasePlace.isEmpty { purchased.append(Line(text: item.purchasePlace, font: regular, size: 7, color: Self.grey)) }
        var price = [Line(text: overview.text(claim.purchaseTotal), font: regular, size: 8)]
        if claim.quantity > 1, let unit = item.purchasePrice, unit.minorUnits > 0 {
            price.append(Line(text: "\(claim.quantity) × \(overview.text(unit))", font: regular, size: 6.5, color: Self.grey))
        }
        let valuation = item.valuation
        let valued = valuation.map { $0.basis != .none } ?? false
        var replacement = [Line(text: valued ? overview.text(valuation?.replacementCost) : "—", font: regular, size: 8)]
        if let valuation { replacement.append(Line(text: ClaimText.basis(valuation.basis), font: regular, size: 6.5, color: Self.grey)) }
        var actualCash = [Line(text: valued ? overview.text(valuation?.actualCashValue) : "—", font: regular, size: 8)]
        if let valuation, valued, valuation.remainingPercent < 100 {
            actualCash.append(Line(text: "\(valuation.remainingPercent) % left", font: regular, size: 6.5, color: Self.grey))
        }
        let cells = [description, purchased, price, replacement, actualCash]
        let rowHeight = cells.map { $0.reduce(0) { $0 + $1.height } }.max()! + 4

        // The photos: thumbnails as tiles, what cannot be shown as lines.
        let tiles = claim.photos.filter { $0.thumbnail != nil }
        let listed = claim.photos.filter { $0.thumbnail == nil }
        let firstTileRow = tiles.isEmpty ? 0 : Tile.height
        try ensure(rowHeight + firstTileRow + 4)

        let rowTop = y
        text(String(claim.quantity), x: Column.quantityRight, baseline: rowTop + 9, font: regular, size: 8.5, alignment: .right)
        draw(description, x: Column.description, top: rowTop, width: Column.descriptionWidth)
        draw(purchased, x: Column.purchased, top: rowTop, width: Column.purchasedWidth)
        draw(price, right: Column.priceRight, top: rowTop)
        draw(replacement, right: Column.replacementRight, top: rowTop)
        draw(actualCash, right: Column.actualCashRight, top: rowTop)
        y = rowTop + rowHeight

        var index = 0
        while index < tiles.count {
            try ensure(Tile.height + 2, continuing: item.name)
            let row = tiles[index..<min(tiles.count, index + Tile.perRow)]
            for (column, photo) in row.enumerated() {
                try draw(photo, x: Column.description + Double(column) * (Tile.width + Tile.gap), top: y)
            }
            y += Tile.height
            index += Tile.perRow
        }
        for photo in listed {
            let line = "\(photo.caption): " + listedText(photo)
            for wrapped in regular.wrapped(line, size: 7.5, width: right - Column.description) {
                try ensure(10, continuing: item.name)
                text(wrapped, x: Column.description, baseline: y + 7.5, font: regular, size: 7.5, color: photo.info == nil ? .rgb(0.6, 0.1, 0) : .black)
                y += 9.6
            }
        }
        y += 3
        page?.drawLine(from: PDFPoint(x: left, y: y), to: PDFPoint(x: right, y: y), width: 0.5, color: Self.rule)
        y += 5
    }

    /// `ensure`, then a line saying whose photos continue at the top of a new page.
    private func ensure(_ height: Double, continuing name: String) throws {
        let before = document.pageCount
        try ensure(height)
        if document.pageCount != before {
            text(name + " (continued)", x: Column.description, baseline: y + 8, font: regular, size: 7.5, color: Self.grey, width: width)
            y += 12
        }
    }

    /// A photo that is not shown, in words: "PDF document, 34 KB, file <sha>.pdf, image <key>".
    func listedText(_ photo: ClaimPhoto) -> String {
        guard let info = photo.info else { return photo.unshown ?? "missing from the image service (image \(photo.key))" }
        var parts = [photo.kindText, ClaimText.size(info.sizeBytes)]
        if let why = photo.unshown, !why.isEmpty, !photo.isDocument, info.mediaType != .movie { parts.append("not shown: " + why) }
        parts.append("file " + photo.originalFileName)
        parts.append("image " + photo.key)
        return parts.joined(separator: ", ")
    }

    /// A thumbnail tile: the JPEG embedded as it is (once per image key), fitted in the tile,
    /// its caption below.
    private func draw(_ photo: ClaimPhoto, x: Double, top: Double) throws {
        guard let thumbnail = photo.thumbnail, let page else { return }
        let box = PDFRect(x: x, y: top + 2, width: Tile.width, height: Tile.imageHeight)
        switch Result(catching: { () throws(PDFError) in try image(of: photo.key, thumbnail) }) {
        case .success(let image):
            let placed = image.fit(into: box)
            page.drawImage(image, in: placed)
            page.strokeRect(placed, lineWidth: 0.4, color: Self.rule)
        case .failure(let error):
            // A thumbnail PDF cannot show is said in its tile; a file that cannot be written stops the report.
            guard error.kind == .invalidJPEG || error.kind == .unsupportedJPEG else { throw error }
            page.strokeRect(box, lineWidth: 0.4, color: Self.rule)
            text("cannot be shown: \(error.message)", x: x + 3, baseline: top + 14, font: regular, size: 6, color: Self.grey, width: Tile.width - 6)
        }
        text(photo.caption, x: x + Tile.width / 2, baseline: top + Tile.imageHeight + 11, font: regular, size: 7.5, alignment: .center)
    }

    /// The image object of `key`'s thumbnail: embedded the first time it is drawn, the same
    /// object every later time.
    private func image(of key: String, _ thumbnail: ClaimPhoto.Thumbnail) throws(PDFError) -> PDFImage {
        if let known = embedded[key] { return known }
        let image = try document.addJPEG(thumbnail.jpeg)
        embedded[key] = image
        return image
    }

    /// Lines from `top`, left-aligned at `x`, each truncated to `width`.
    private func draw(_ lines: [Line], x: Double, top: Double, width: Double) {
        var baseline = top
        for line in lines {
            baseline += line.height
            text(line.text, x: x, baseline: baseline - line.size * 0.28, font: line.font, size: line.size, color: line.color, width: width)
        }
    }

    /// Lines from `top`, right-aligned at `right`, each truncated to an amount's width.
    private func draw(_ lines: [Line], right: Double, top: Double) {
        var baseline = top
        for line in lines {
            baseline += line.height
            text(
                line.text, x: right, baseline: baseline - line.size * 0.28, font: line.font, size: line.size, color: line.color, alignment: .right,
                width: Column.amountWidth)
        }
    }

    func endSection(_ section: ClaimSection, totals: ClaimTotals) throws {
        guard let overview else { return }
        let currencies = totals.currencies(first: overview.currency)
        let shown = currencies.isEmpty ? [overview.currency] : currencies
        try ensure(Double(shown.count) * 13 + 8)
        page?.drawLine(from: PDFPoint(x: left, y: y), to: PDFPoint(x: right, y: y), width: 1, color: .black)
        y += 3
        for (index, code) in shown.enumerated() {
            let sums = totals.amounts(in: code)
            let label = index == 0 ? "Subtotal \(section.name): \(ClaimText.plural(totals.itemCount, "item"))" : "in \(code)"
            text(label, x: Column.description, baseline: y + 10, font: bold, size: 8.5, width: Column.priceRight - Column.description - Column.amountWidth - 4)
            text(overview.text(sums.purchase), x: Column.priceRight, baseline: y + 10, font: bold, size: 8.5, alignment: .right, width: Column.amountWidth)
            text(overview.text(sums.replacement), x: Column.replacementRight, baseline: y + 10, font: bold, size: 8.5, alignment: .right, width: Column.amountWidth)
            text(overview.text(sums.actualCash), x: Column.actualCashRight, baseline: y + 10, font: bold, size: 8.5, alignment: .right, width: Column.amountWidth)
            y += 13
        }
        self.section = nil
    }
}
