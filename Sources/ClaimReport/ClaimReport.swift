import Foundation
import Proto

/// `homepwner report claim`: the claim packet an insurance adjuster accepts, in PDF, CSV or
/// HTML, written location by location and page by page (memory stays flat whatever the number
/// of items).
public enum ClaimReport {
    /// Writes the report of `location`'s subtree (nil: everything) into `output`'s working
    /// copy and puts it in place; on any failure the working copy is removed.
    ///
    /// - Parameter progress: Told after each item.
    /// - Throws: `ClaimReportError` (an empty selection, a write that failed), the services'
    ///   `RPCError`s (the image service down: UNAVAILABLE, naming it).
    public static func write(
        location: Location?, to output: ClaimOutput, gatherer: ClaimGatherer, options: ClaimReportOptions = ClaimReportOptions(),
        progress: (ClaimProgress) -> Void = { _ in }
    ) async throws -> ClaimReportSummary {
        do {
            let summary = try await writeWorkingCopy(location: location, output: output, gatherer: gatherer, options: options, progress: progress)
            try output.commit()
            return summary
        } catch {
            output.discard()
            throw error
        }
    }

    private static func writeWorkingCopy(
        location: Location?, output: ClaimOutput, gatherer: ClaimGatherer, options: ClaimReportOptions,
        progress: (ClaimProgress) -> Void
    ) async throws -> ClaimReportSummary {
        let overview = try await gatherer.overview(location: location, asOf: options.asOf, overrides: options.cover, needsImages: true)
        let writer: any ClaimWriter
        var html: ClaimHTMLWriter?
        var pdf: ClaimPDFWriter?
        switch output.format {
        case .pdf:
            let made = try ClaimPDFWriter(path: output.workingPath)
            pdf = made
            writer = made
        case .csv: writer = try ClaimCSVWriter(path: output.workingPath)
        case .html:
            let made = try ClaimHTMLWriter(folder: output.workingPath, services: gatherer.services, originals: options.originals)
            html = made
            writer = made
        }
        // Beside the output, never inside an HTML folder that is about to be moved in place.
        let ledgerFolder = (output.workingPath as NSString).deletingLastPathComponent
        let ledger = try ClaimLedger(folder: ledgerFolder.isEmpty ? "." : ledgerFolder)
        defer { ledger.remove() }
        try writer.begin(overview)
        var state = ClaimProgress(itemsWritten: 0, itemTotal: overview.itemCount, photosWritten: 0, section: "")
        var thumbnails: Int64 = 0
        for section in overview.sections {
            state.section = section.name
            try writer.beginSection(section)
            var totals = ClaimTotals()
            try await gatherer.forEachItem(of: section, overview: overview, thumbnails: writer.wantsThumbnails) { item in
                try await writer.write(item, in: section)
                try ledger.append(item, section: section)
                totals.add(item, defaultCurrency: overview.currency)
                thumbnails += Int64(item.photos.filter { $0.thumbnail != nil }.count)
                state.itemsWritten += 1
                state.photosWritten += Int64(item.photos.count)
                progress(state)
            }
            try writer.endSection(section, totals: totals)
        }
        let pages = try writer.finish(ledger: ledger)
        return ClaimReportSummary(
            path: output.path, format: output.format, items: state.itemsWritten, sections: overview.sections.count,
            photos: state.photosWritten, thumbnails: thumbnails, originals: html?.originalsWritten ?? 0, pages: pages,
            missingCharacters: pdf?.missingCharacters ?? [])
    }
}
