/// A writer of one format: told the overview, then each section's items in order with the
/// section's subtotal, then the ledger of originals. Writes as it is told and keeps no item.
protocol ClaimWriter: AnyObject {
    /// Whether items come with their photos' thumbnails.
    var wantsThumbnails: Bool { get }
    func begin(_ overview: ClaimOverview) throws
    func beginSection(_ section: ClaimSection) throws
    func write(_ item: ClaimItem, in section: ClaimSection) async throws
    func endSection(_ section: ClaimSection, totals: ClaimTotals) throws
    /// Writes the end and closes the output; answers the pages written (PDF) or 0.
    func finish(ledger: ClaimLedger) throws -> Int
}
