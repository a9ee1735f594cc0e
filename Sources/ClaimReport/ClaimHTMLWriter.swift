import Digest
import Foundation
import Proto
import RPC

/// The claim as a folder that opens offline (a USB stick): `index.html` with its stylesheet
/// inline and no JavaScript, `thumbs/<key>.jpg` beside it, and `originals/<sha256>.<ext>`:
/// every PDF document (a receipt cannot be shown as a thumbnail, so it is linked), and with
/// `originals` every photo, each thumbnail then linking to its original. All links are
/// relative; all text is escaped.
final class ClaimHTMLWriter: ClaimWriter {
    private let folder: String
    private let services: ClaimServices
    private let copiesOriginals: Bool
    private let page: ClaimFile
    private var overview: ClaimOverview?
    private var sectionIndex = 0
    /// Originals written, and their names (one per distinct content).
    private(set) var originalsWritten: Int64 = 0

    /// Bytes per GetImage call when copying an original, well under the reply limit.
    static let rangeBytes: Int64 = 8 << 20

    var wantsThumbnails: Bool { true }

    init(folder: String, services: ClaimServices, originals: Bool) throws {
        self.folder = folder
        self.services = services
        copiesOriginals = originals
        for sub in ["thumbs", "originals"] {
            do {
                try FileManager.default.createDirectory(atPath: folder + "/" + sub, withIntermediateDirectories: true)
            } catch {
                throw ClaimReportError(.writeFailed, "cannot make \(folder)/\(sub): \(error.localizedDescription)")
            }
        }
        page = try ClaimFile(creating: folder + "/index.html")
    }

    private func write(_ text: String) throws { try page.write(text) }

    private func e(_ text: String) -> String { HTMLText.escaped(text) }

    // MARK: Cover

    func begin(_ overview: ClaimOverview) throws {
        self.overview = overview
        let title = "Contents inventory / claim packet"
        try write(
            """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="generator" content="Homepwner">
            <title>\(e(title)) — \(e(overview.scopeName))</title>
            <style>
            \(ClaimHTMLStyle.css)
            </style>
            </head>
            <body>
            <header class="cover">
            <h1>\(e(title))</h1>
            <p class="scope">\(e(overview.scopeName)) · values as of \(e(overview.asOf))</p>
            <dl class="fields">

            """)
        let cover = overview.cover
        let total = overview.valuation.total ?? ValuationTotals()
        for (name, value) in [
            ("Policyholder", cover.policyholder), ("Insurer", cover.insurer), ("Policy number", cover.policyNumber),
            ("Address", cover.address), ("Values as of", overview.asOf), ("Prepared", ClaimText.utc(overview.madeAt)),
            ("Items", "\(ClaimText.count(overview.itemCount)) (quantity \(ClaimText.count(total.quantity)))"),
            ("Photos", ClaimText.count(overview.photoCount)),
            ("Readiness", "\(overview.readiness.overall?.scorePercent ?? 100) % of the evidence a claim asks for is recorded"),
        ] {
            try write("<dt>\(e(name))</dt><dd>\(value.isEmpty ? "<span class=\"meta\">not given</span>" : e(value))</dd>\n")
        }
        try write(
            """
            </dl>
            <table class="totals">
            <thead><tr><th>Totals</th><th class="num">Replacement cost (RCV)</th><th class="num">Actual cash value (ACV)</th><th class="num">Purchase price</th></tr></thead>
            <tbody><tr><td>\(e(overview.scopeName))</td><td class="num">\(e(overview.text(total.replacementCost)))</td><td class="num">\(e(overview.text(total.actualCashValue)))</td><td class="num">\(e(overview.text(total.purchasePrice)))</td></tr></tbody>
            </table>

            """)
        var notes: [String] = []
        if total.unvaluedCount > 0 { notes.append("\(ClaimText.plural(total.unvaluedCount, "item")) with no value at all") }
        if total.otherCurrencyCount > 0 {
            notes.append("\(ClaimText.plural(total.otherCurrencyCount, "item")) valued in another currency than \(overview.currency), not summed")
        }
        for note in notes { try write("<p class=\"meta\">\(e(note))</p>\n") }
        for warning in overview.valuation.warnings { try write("<p class=\"warning\">\(e(warning.message))</p>\n") }
        try write("<h3>Contents</h3>\n<ol class=\"contents\">\n")
        for (index, section) in overview.sections.enumerated() {
            try write("<li><a href=\"#location-\(index + 1)\">\(e(section.name))</a> <span class=\"meta\">\(e(ClaimText.plural(section.itemCount, "item")))</span></li>\n")
        }
        try write("<li><a href=\"#categories\">By category</a></li>\n<li><a href=\"#checksums\">Original photos and their SHA-256</a></li>\n</ol>\n</header>\n")
    }

    // MARK: Sections

    func beginSection(_ section: ClaimSection) throws {
        sectionIndex += 1
        try write(
            """
            <section class="location" id="location-\(sectionIndex)">
            <h2>\(e(section.name))</h2>
            <table class="items">
            <colgroup><col class="qty"><col class="description"><col class="purchased"><col class="amount"><col class="amount"><col class="amount"></colgroup>
            <thead><tr><th class="num">Qty</th><th>Description</th><th>Purchased</th><th class="num">Purchase price</th><th class="num">RCV</th><th class="num">ACV</th></tr></thead>

            """)
    }

    func write(_ claim: ClaimItem, in section: ClaimSection) async throws {
        guard let overview else { return }
        let item = claim.item
        var description = "<strong>\(e(item.name))</strong>"
        if !claim.brandAndModel.isEmpty { description += "<div>\(e(claim.brandAndModel))</div>" }
        if !item.serialNumber.isEmpty { description += "<div>S/N <code>\(e(item.serialNumber))</code></div>" }
        let meta = ([claim.categoryName] + item.tags.map { "#" + $0 }).filter { !$0.isEmpty }
        if !meta.isEmpty { description += "<div class=\"meta\">\(e(meta.joined(separator: " · ")))</div>" }
        if !item.notes.isEmpty { description += "<div class=\"notes\">\(e(item.notes))</div>" }
        var purchased = e(item.purchaseDate.isEmpty ? "—" : item.purchaseDate)
        let age = ClaimText.age(months: item.valuation?.ageMonths ?? -1)
        if !age.isEmpty { purchased += "<div class=\"meta\">\(e(age))</div>" }
        if !item.purchasePlace.isEmpty { purchased += "<div class=\"meta\">\(e(item.purchasePlace))</div>" }
        var price = e(overview.text(claim.purchaseTotal))
        if claim.quantity > 1, let unit = item.purchasePrice, unit.minorUnits > 0 {
            price += "<div class=\"meta\">\(claim.quantity) × \(e(overview.text(unit)))</div>"
        }
        let valuation = item.valuation
        let valued = valuation.map { $0.basis != .none } ?? false
        var rcv = valued ? e(overview.text(valuation?.replacementCost)) : "—"
        if let valuation { rcv += "<div class=\"meta\">\(e(ClaimText.basis(valuation.basis)))</div>" }
        var acv = valued ? e(overview.text(valuation?.actualCashValue)) : "—"
        if let valuation, valued, valuation.remainingPercent < 100 { acv += "<div class=\"meta\">\(valuation.remainingPercent) % left</div>" }
        try write(
            "<tbody class=\"item\">\n<tr class=\"row\"><td class=\"num\">\(claim.quantity)</td><td>\(description)</td><td class=\"date\">\(purchased)</td>"
                + "<td class=\"num\">\(price)</td><td class=\"num\">\(rcv)</td><td class=\"num\">\(acv)</td></tr>\n")
        if !claim.photos.isEmpty {
            try write("<tr class=\"photos\"><td></td><td colspan=\"5\">\n")
            for photo in claim.photos { try await write(photo, of: item) }
            try write("</td></tr>\n")
        }
        try write("</tbody>\n")
    }

    private func write(_ photo: ClaimPhoto, of item: Item) async throws {
        let alt = e("\(photo.caption): \(item.name)")
        if let thumbnail = photo.thumbnail {
            let name = "thumbs/" + photo.thumbnailFileName
            try writeThumbnail(thumbnail, to: name)
            var image = "<img src=\"\(HTMLText.href(name))\" width=\"\(thumbnail.width)\" height=\"\(thumbnail.height)\" alt=\"\(alt)\">"
            if copiesOriginals, let original = try await copyOriginal(photo) {
                image = "<a href=\"\(HTMLText.href(original))\">\(image)</a>"
            }
            try write("<figure>\(image)<figcaption>\(e(photo.caption))</figcaption></figure>\n")
            return
        }
        guard let info = photo.info else {
            try write("<p class=\"unshown\">\(e(photo.caption)): <span class=\"warning\">\(e(photo.unshown ?? "missing"))</span></p>\n")
            return
        }
        // A document is always copied: it cannot be shown, so the page links it.
        let linked = photo.isDocument || copiesOriginals ? try await copyOriginal(photo) : nil
        let name = linked.map { "<a href=\"\(HTMLText.href($0))\">\(e(photo.originalFileName))</a>" } ?? e(photo.originalFileName)
        try write(
            "<p class=\"unshown\">\(e(photo.caption)): \(name) <span class=\"meta\">— \(e(photo.kindText)), "
                + "\(e(ClaimText.size(info.sizeBytes))), image <code>\(e(photo.key))</code></span></p>\n")
    }

    /// Writes `thumbnail` to `name` in the folder, once: a photo attached to several items is
    /// shown by each from the same file (the folder started empty, so a file there is this
    /// report's, and the disk remembers which are written, not memory).
    private func writeThumbnail(_ thumbnail: ClaimPhoto.Thumbnail, to name: String) throws {
        let path = folder + "/" + name
        if FileManager.default.fileExists(atPath: path) { return }
        let file = try ClaimFile(creating: path)
        try file.write(bytes: thumbnail.jpeg)
        try file.close()
    }

    func endSection(_ section: ClaimSection, totals: ClaimTotals) throws {
        guard let overview else { return }
        let currencies = totals.currencies(first: overview.currency)
        try write("<tfoot>\n")
        for (index, code) in (currencies.isEmpty ? [overview.currency] : currencies).enumerated() {
            let sums = totals.amounts(in: code)
            let label = index == 0
                ? "Subtotal, \(ClaimText.plural(totals.itemCount, "item")) (quantity \(ClaimText.count(totals.quantity)))" : "In \(code)"
            try write(
                "<tr><td></td><td colspan=\"2\">\(e(label))</td><td class=\"num\">\(e(overview.text(sums.purchase)))</td>"
                    + "<td class=\"num\">\(e(overview.text(sums.replacement)))</td><td class=\"num\">\(e(overview.text(sums.actualCash)))</td></tr>\n")
        }
        try write("</tfoot>\n</table>\n</section>\n")
    }

    // MARK: End

    func finish(ledger: ClaimLedger) throws -> Int {
        guard let overview else { return 0 }
        try write(
            """
            <section class="summary" id="categories">
            <h2>By category</h2>
            <table>
            <thead><tr><th>Category</th><th class="num">Items</th><th class="num">RCV</th><th class="num">ACV</th><th class="num">Limit</th><th class="num">Of the limit</th></tr></thead>
            <tbody>

            """)
        for group in overview.valuation.byCategory {
            let totals = group.totals ?? ValuationTotals()
            let limit = group.limit.flatMap { $0.minorUnits > 0 ? $0 : nil }
            let share = limit.map { limit in
                (totals.replacementCost?.minorUnits ?? 0) > 0 ? "\(Int(Double(totals.replacementCost!.minorUnits) * 100 / Double(limit.minorUnits))) %" : "0 %"
            } ?? ""
            try write(
                "<tr><td>\(e(group.name.isEmpty ? "No category" : group.name))</td><td class=\"num\">\(ClaimText.count(totals.itemCount))</td>"
                    + "<td class=\"num\">\(e(overview.text(totals.replacementCost)))</td><td class=\"num\">\(e(overview.text(totals.actualCashValue)))</td>"
                    + "<td class=\"num\">\(limit.map { e(overview.text($0)) } ?? "")</td><td class=\"num\">\(share)</td></tr>\n")
        }
        let total = overview.valuation.total ?? ValuationTotals()
        try write(
            "</tbody>\n<tfoot><tr><td>All</td><td class=\"num\">\(ClaimText.count(total.itemCount))</td>"
                + "<td class=\"num\">\(e(overview.text(total.replacementCost)))</td><td class=\"num\">\(e(overview.text(total.actualCashValue)))</td><td></td><td></td></tr></tfoot>\n</table>\n</section>\n")
        try write(
            """
            <section class="checksums" id="checksums">
            <h2>Original photos and their SHA-256</h2>
            <p class="meta">Each photo as the image service received it: its SHA-256 proves the original has not changed since. Taken is when the camera says it took the photo (its EXIF DateTimeOriginal, read when it was received), in the camera's time zone when it recorded one.</p>
            <p class="meta">History head when this report began: <code>\(e(overview.historyHeadText))</code>. Every change to the inventory is kept in a hash chain (homepwner history); an entry after this head is a change made after this report.</p>
            <table>
            <thead><tr><th>Item</th><th>Photo</th><th>Taken</th><th>Received</th><th>SHA-256</th></tr></thead>
            <tbody>

            """)
        try ledger.forEach { entry in
            try write(
                "<tr><td>\(e(entry.itemName))<div class=\"meta\">\(e(entry.sectionName))</div></td>"
                    + "<td>\(e(entry.caption))<div class=\"meta\">\(e(entry.contentType)), \(e(ClaimText.size(entry.sizeBytes)))</div></td>"
                    + "<td>\(takenCell(entry))</td>"
                    + "<td>\(e(ClaimText.utc(milliseconds: entry.receivedAtMilliseconds)))</td><td class=\"sha\">\(e(entry.sha256))</td></tr>\n")
        }
        try write(
            """
            </tbody>
            </table>
            </section>
            <footer>Made by Homepwner on \(e(ClaimText.utc(overview.madeAt))).</footer>
            </body>
            </html>

            """)
        try page.close()
        return 0
    }

    /// The Taken cell of a ledger entry: when the photo was taken; for a JPEG without a date,
    /// a note that it has none; empty for a document or a movie.
    private func takenCell(_ entry: ClaimLedger.Entry) -> String {
        if !entry.takenAt.isEmpty { return e(ClaimText.taken(entry.takenAt)) }
        return entry.contentType == "image/jpeg" ? "<span class=\"meta\">no date in the photo</span>" : ""
    }

    // MARK: Originals

    /// Copies the photo's original to `originals/<sha256>.<ext>` (once per content), streamed
    /// range by range and checked against its SHA-256; answers the relative path, nil when
    /// the image is gone.
    private func copyOriginal(_ photo: ClaimPhoto) async throws -> String? {
        guard let info = photo.info, !photo.originalFileName.isEmpty else { return nil }
        let name = "originals/" + photo.originalFileName
        let path = folder + "/" + name
        if FileManager.default.fileExists(atPath: path) { return name }
        let partial = path + ".part"
        let file = try ClaimFile(creating: partial)
        var hash = SHA256()
        var offset: Int64 = 0
        do {
            while offset < info.sizeBytes {
                let bytes = try await services.range(of: info.key, offset: offset, length: min(Self.rangeBytes, info.sizeBytes - offset))
                guard !bytes.isEmpty else { throw RPCError.dataLoss("image \(info.key): the service sent no bytes at offset \(offset)") }
                try bytes.withUnsafeBytes { raw in
                    hash.update(raw)
                    try file.write(raw)
                }
                offset += Int64(bytes.count)
            }
            try file.close()
            guard hash.checksum() == info.checksum else {
                throw RPCError.dataLoss("image \(info.key): the bytes received hash to \(hash.checksum()), not the stored \(info.checksum)")
            }
            guard rename(partial, path) == 0 else {
                throw ClaimReportError(.writeFailed, "cannot write \(path): \(ClaimFile.reason(errno))")
            }
        } catch {
            unlink(partial)
            throw error
        }
        originalsWritten += 1
        return name
    }
}
