import Foundation
import PDF
import Proto

/// The cover and the closing pages of the PDF packet.
extension ClaimPDFWriter {
    // MARK: Cover

    func begin(_ overview: ClaimOverview) throws {
        self.overview = overview
        document.info = PDFDocumentInfo(
            title: "Contents inventory / claim packet — \(overview.scopeName)", author: overview.cover.policyholder,
            subject: "Contents inventory for an insurance claim, values as of \(overview.asOf)", creationDate: overview.madeAt)
        try newPage()
        y = 70
        text("Contents inventory / claim packet", x: left, baseline: y + 22, font: bold, size: 22, width: width)
        y += 34
        text(overview.scopeName, x: left, baseline: y + 13, font: regular, size: 13, color: Self.grey, width: width)
        y += 24
        page?.drawLine(from: PDFPoint(x: left, y: y), to: PDFPoint(x: right, y: y), width: 1.5)
        y += 14

        let cover = overview.cover
        let total = overview.valuation.total ?? ValuationTotals()
        let score = overview.readiness.overall?.scorePercent ?? 100
        let fields: [(String, String)] = [
            ("Policyholder", cover.policyholder), ("Insurer", cover.insurer), ("Policy number", cover.policyNumber),
            ("Address", cover.address), ("Values as of", overview.asOf), ("Prepared", ClaimText.utc(overview.madeAt)),
            ("Items", "\(ClaimText.count(overview.itemCount)) (quantity \(ClaimText.count(total.quantity)))"),
            ("Photos", ClaimText.count(overview.photoCount)),
            ("Readiness", "\(score) % of the evidence a claim asks for is recorded (photo, receipt, serial, value, purchase date)"),
        ]
        for (label, value) in fields {
            text(label, x: left, baseline: y + 10, font: bold, size: 10, color: Self.grey)
            let lines = value.isEmpty ? ["not given"] : regular.wrapped(value, size: 10, width: width - 110)
            for line in lines.prefix(6) {
                text(line, x: left + 110, baseline: y + 10, font: regular, size: 10, color: value.isEmpty ? Self.grey : .black)
                y += 14
            }
            y += 3
        }

        // The totals, large.
        y += 10
        let boxHeight = 58.0
        page?.fillRect(PDFRect(x: left, y: y, width: width, height: boxHeight), color: .gray(0.94))
        page?.strokeRect(PDFRect(x: left, y: y, width: width, height: boxHeight), lineWidth: 0.6, color: Self.rule)
        let third = width / 3
        for (index, (label, money)) in [
            ("Replacement cost (RCV)", total.replacementCost), ("Actual cash value (ACV)", total.actualCashValue),
            ("Purchase price", total.purchasePrice),
        ].enumerated() {
            let x = left + Double(index) * third + 12
            text(label, x: x, baseline: y + 18, font: regular, size: 9, color: Self.grey, width: third - 20)
            text(overview.text(money), x: x, baseline: y + 42, font: bold, size: 17, width: third - 20)
        }
        y += boxHeight + 14
        var notes: [String] = []
        if total.unvaluedCount > 0 { notes.append("\(ClaimText.plural(total.unvaluedCount, "item")) with no value at all are counted at 0.") }
        if total.otherCurrencyCount > 0 {
            notes.append("\(ClaimText.plural(total.otherCurrencyCount, "item")) valued in another currency than \(overview.currency) are listed, not summed.")
        }
        for note in notes {
            text(note, x: left, baseline: y + 9, font: regular, size: 9, color: Self.grey, width: width)
            y += 13
        }
        for warning in overview.valuation.warnings {
            for line in regular.wrapped("Limit: " + warning.message, size: 9, width: width) {
                text(line, x: left, baseline: y + 9, font: regular, size: 9, color: .rgb(0.6, 0.1, 0))
                y += 13
            }
        }

        // The contents: as many locations as fit.
        y += 12
        text("Contents", x: left, baseline: y + 12, font: bold, size: 12)
        y += 20
        let room = Int((bottom - y - 14) / 13)
        let sections = overview.sections
        for (index, section) in sections.enumerated() {
            if index == room - 1 && sections.count > room {
                text("… and \(sections.count - index) more locations", x: left + 10, baseline: y + 9, font: regular, size: 9, color: Self.grey)
                y += 13
                break
            }
            text(section.name, x: left + 10, baseline: y + 9, font: regular, size: 9, width: width - 100)
            text(ClaimText.plural(section.itemCount, "item"), x: right, baseline: y + 9, font: regular, size: 9, color: Self.grey, alignment: .right)
            y += 13
        }
        if y + 26 < bottom {
            text("Then: totals by category and by location; the SHA-256 of every original photo.", x: left + 10, baseline: y + 9, font: regular, size: 9, color: Self.grey)
        }
    }

    // MARK: End

    func finish(ledger: ClaimLedger) throws -> Int {
        guard let overview else { return 0 }
        try totalsPage(overview)
        try checksumPages(ledger)
        try missingCharactersNote()
        if page != nil { try document.endPage() }
        page = nil
        try document.finish()
        return document.pageCount
    }

    /// Totals by category (with the policy's limits) and by location.
    private func totalsPage(_ overview: ClaimOverview) throws {
        section = nil
        try newPage()
        text("Totals by category", x: left, baseline: y + 15, font: bold, size: 15)
        y += 26
        let columns: [(String, Double, PDFTextAlignment)] = [
            ("Category", left, .left), ("Items", 250, .right), ("RCV", 330, .right), ("ACV", 405, .right), ("Limit", 480, .right),
            ("Of limit", right, .right),
        ]
        func header() {
            page?.fillRect(PDFRect(x: left, y: y, width: width, height: 15), color: .gray(0.9))
            for (name, x, alignment) in columns {
                text(name, x: alignment == .left ? x + 2 : x, baseline: y + 10.5, font: bold, size: 7.5, alignment: alignment)
            }
            y += 19
        }
        func row(_ cells: [String], font: PDFFontChain) throws {
            try ensure(13)
            for ((_, x, alignment), cell) in zip(columns, cells) {
                text(cell, x: alignment == .left ? x + 2 : x, baseline: y + 9, font: font, size: 8.5, alignment: alignment, width: alignment == .left ? 150 : 70)
            }
            y += 13
        }
        header()
        for group in overview.valuation.byCategory {
            let totals = group.totals ?? ValuationTotals()
            let limit = group.limit.flatMap { $0.minorUnits > 0 ? $0 : nil }
            let share = limit.map { "\(Int(Double(totals.replacementCost?.minorUnits ?? 0) * 100 / Double($0.minorUnits))) %" } ?? ""
            try row(
                [
                    group.name.isEmpty ? "No category" : group.name, ClaimText.count(totals.itemCount), overview.text(totals.replacementCost),
                    overview.text(totals.actualCashValue), limit.map { overview.text($0) } ?? "", share,
                ], font: regular)
        }
        let total = overview.valuation.total ?? ValuationTotals()
        page?.drawLine(from: PDFPoint(x: left, y: y), to: PDFPoint(x: right, y: y), width: 1)
        y += 2
        try row(["All", ClaimText.count(total.itemCount), overview.text(total.replacementCost), overview.text(total.actualCashValue), "", ""], font: bold)
        for warning in overview.valuation.warnings {
            try ensure(13)
            text("Limit: " + warning.message, x: left, baseline: y + 9, font: regular, size: 8.5, color: .rgb(0.6, 0.1, 0), width: width)
            y += 13
        }

        guard !overview.valuation.byLocation.isEmpty else { return }
        try ensure(60)
        y += 18
        text("Totals by location", x: left, baseline: y + 15, font: bold, size: 15)
        y += 20
        text("Each location with everything inside it.", x: left, baseline: y + 8, font: regular, size: 8, color: Self.grey)
        y += 14
        let locationColumns: [(String, Double, PDFTextAlignment)] = [
            ("Location", left, .left), ("Items", 330, .right), ("Purchase price", 405, .right), ("RCV", 480, .right), ("ACV", right, .right),
        ]
        page?.fillRect(PDFRect(x: left, y: y, width: width, height: 15), color: .gray(0.9))
        for (name, x, alignment) in locationColumns {
            text(name, x: alignment == .left ? x + 2 : x, baseline: y + 10.5, font: bold, size: 7.5, alignment: alignment)
        }
        y += 19
        for group in overview.valuation.byLocation {
            let totals = group.totals ?? ValuationTotals()
            try ensure(13)
            let cells = [
                group.name.isEmpty ? ClaimSection.noLocationName : group.name, ClaimText.count(totals.itemCount), overview.text(totals.purchasePrice),
                overview.text(totals.replacementCost), overview.text(totals.actualCashValue),
            ]
            for ((_, x, alignment), cell) in zip(locationColumns, cells) {
                text(cell, x: alignment == .left ? x + 2 : x, baseline: y + 9, font: regular, size: 8.5, alignment: alignment, width: alignment == .left ? 240 : 70)
            }
            y += 13
        }
    }

    /// Every original with its SHA-256, the time the image service received it and the time it
    /// was taken (its EXIF), each in three lines: the item and its location, then received at
    /// the right; the SHA-256, then taken at the right; what it is.
    private func checksumPages(_ ledger: ClaimLedger) throws {
        try newPage()
        func heading(_ continued: Bool) {
            text("Original photos and their SHA-256" + (continued ? " (continued)" : ""), x: left, baseline: y + 15, font: bold, size: 15)
            y += 22
            if !continued {
                for line in regular.wrapped(
                    "Each photo and document as the image service received it, with the item it belongs to. The SHA-256 of a file "
                        + "proves it is the one received then: compare it with `sha256sum` of the original. \"Taken\" is when the camera "
                        + "says it took the photo (its EXIF DateTimeOriginal, read when it was received), in the camera's time zone "
                        + "when it recorded one.", size: 8, width: width)
                {
                    text(line, x: left, baseline: y + 8, font: regular, size: 8, color: Self.grey)
                    y += 10.5
                }
                y += 4
                if let overview {
                    text("History head when this report began: " + overview.historyHeadText, x: left, baseline: y + 8, font: regular, size: 7.5)
                    y += 10.5
                    for line in regular.wrapped(
                        "Every change to the inventory is kept in a hash chain (homepwner history); an entry after this head is a change "
                            + "made after this report. 'homepwner verify' checks the chain and the originals.", size: 8, width: width)
                    {
                        text(line, x: left, baseline: y + 8, font: regular, size: 8, color: Self.grey)
                        y += 10.5
                    }
                }
                y += 6
            }
        }
        heading(false)
        if ledger.count == 0 {
            text("No photos are attached to these items.", x: left, baseline: y + 9, font: regular, size: 9, color: Self.grey)
            y += 14
        }
        try ledger.forEach { entry in
            if y + 36 > bottom {
                try newPage()
                heading(true)
            }
            text(entry.itemName, x: left, baseline: y + 9, font: bold, size: 8, width: 215)
            text(entry.sectionName, x: left + 220, baseline: y + 9, font: regular, size: 7, color: Self.grey, width: 120)
            text(
                "received " + ClaimText.utc(milliseconds: entry.receivedAtMilliseconds), x: right, baseline: y + 9, font: regular, size: 7.5,
                alignment: .right)
            text(entry.sha256, x: left + 8, baseline: y + 19.5, font: mono, size: 7.5)
            // A JPEG without a date says so; a document or a movie has none to say.
            if !entry.takenAt.isEmpty {
                text("taken " + ClaimText.taken(entry.takenAt), x: right, baseline: y + 19.5, font: regular, size: 7.5, alignment: .right, width: 170)
            } else if entry.contentType == "image/jpeg" {
                text("taken: no date in the photo", x: right, baseline: y + 19.5, font: regular, size: 7, color: Self.grey, alignment: .right)
            }
            text(
                "\(entry.caption) · \(entry.contentType) · \(ClaimText.size(entry.sizeBytes))", x: left + 8, baseline: y + 29.5, font: regular,
                size: 7, color: Self.grey, width: width - 8)
            y += 36
        }
    }

    /// The characters no font could print, as they were drawn and by code point, at the end
    /// of the last page (never a silent gap).
    private func missingCharactersNote() throws {
        let characters = missingCharacters
        guard !characters.isEmpty else { return }
        let list = characters.map { "\(Character($0)) U+" + String($0.value, radix: 16, uppercase: true).leftPadded(to: 4) }.joined(separator: ", ")
        let lines = regular.wrapped(list, size: 9, width: width)
        try ensure(40 + Double(min(lines.count, 4)) * 12)
        y += 16
        text("Characters the font could not print", x: left, baseline: y + 11, font: bold, size: 11)
        y += 16
        text("Drawn as \u{FFFD} above; the names hold them as recorded.", x: left, baseline: y + 8, font: regular, size: 8, color: Self.grey)
        y += 14
        for line in lines {
            try ensure(12)
            text(line, x: left, baseline: y + 9, font: regular, size: 9)
            y += 12
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
