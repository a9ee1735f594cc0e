import Foundation
import Proto

/// The claim as CSV, RFC 4180: a header row, then a row per item in the report's order; fields
/// with a comma, a double quote, CR or LF are quoted, quotes inside doubled; CRLF line ends;
/// UTF-8 without a byte order mark. Amounts are plain decimals ("1299.00") for the whole line
/// (per-unit × quantity), in the row's Currency; one in another currency is followed by its code.
/// A text field that a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a
/// CR) is written with a leading apostrophe, as OWASP advises against CSV injection: an item
/// named "=HYPERLINK(…)" stays text when the adjuster opens the file. "Photo files" names each
/// original "<sha256>.<ext>", "; " apart; "Photo taken" gives, in the same order and the same
/// way, when each was taken (`ImageInfo.taken_at`, ISO 8601: "2024-05-07T09:33:04+08:00", the
/// camera's local time with its UTC offset when it recorded one), an entry empty for a photo
/// without one, the field empty when none of them has one.
final class ClaimCSVWriter: ClaimWriter {
    /// The header row's fields.
    static let header = [
        "Room", "Quantity", "Description", "Brand", "Model", "Serial", "Purchase date", "Purchase price", "Replacement cost", "ACV",
        "Currency", "Category", "Tags", "Notes", "Photo files", "Photo taken",
    ]

    private let file: ClaimFile
    private var currency = "USD"

    var wantsThumbnails: Bool { false }

    init(path: String) throws(ClaimReportError) {
        file = try ClaimFile(creating: path)
    }

    func begin(_ overview: ClaimOverview) throws {
        currency = overview.currency
        try file.write(Self.row(Self.header))
    }

    func beginSection(_ section: ClaimSection) throws {}

    func write(_ claim: ClaimItem, in section: ClaimSection) async throws {
        try file.write(Self.row(Self.fields(of: claim, room: section.name, defaultCurrency: currency)))
    }

    func endSection(_ section: ClaimSection, totals: ClaimTotals) throws {}

    func finish(ledger: ClaimLedger) throws -> Int {
        try file.close()
        return 0
    }

    /// An item's fields in `header` order.
    static func fields(of claim: ClaimItem, room: String, defaultCurrency: String) -> [String] {
        let item = claim.item
        let valuation = item.valuation
        let rowCurrency = [valuation?.replacementCost?.currency, claim.purchaseTotal?.currency].compactMap { $0 }
            .first { !$0.isEmpty } ?? defaultCurrency
        func amount(_ money: Money?) -> String {
            guard let money, money.minorUnits != 0 else { return "" }
            let code = money.currency.isEmpty ? defaultCurrency : money.currency
            var copy = money
            copy.currency = code
            return code == rowCurrency ? copy.decimalText : copy.decimalText + " " + code
        }
        let text = inert
        // The photos the image service holds, each with its file name.
        let stored = claim.photos.filter { !$0.originalFileName.isEmpty }
        return [
            text(room), String(claim.quantity), text(item.name), text(item.brand), text(item.model), text(item.serialNumber),
            item.purchaseDate, amount(claim.purchaseTotal), amount(valuation?.replacementCost), amount(valuation?.actualCashValue),
            rowCurrency, text(claim.categoryName), text(item.tags.joined(separator: "; ")), text(item.notes),
            stored.map(\.originalFileName).joined(separator: "; "),
            text(stored.contains { $0.info?.takenAt.isEmpty == false } ? stored.map { $0.info?.takenAt ?? "" }.joined(separator: "; ") : ""),
        ]
    }

    /// Text a spreadsheet will not run as a formula: one starting with =, +, -, @, a tab or a
    /// CR gets a leading apostrophe.
    static func inert(_ text: String) -> String {
        guard let first = text.unicodeScalars.first, ["=", "+", "-", "@", "\t", "\r"].contains(first) else { return text }
        return "'" + text
    }

    /// One record: the fields escaped, separated by commas, ended by CRLF.
    static func row(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    /// A field as RFC 4180 wants it: quoted when it holds a comma, a quote, CR or LF.
    static func field(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
