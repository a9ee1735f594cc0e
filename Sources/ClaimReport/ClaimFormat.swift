/// The formats of a claim packet.
public enum ClaimFormat: String, Sendable, CaseIterable {
    /// One PDF file: cover, a table per location with the photos, subtotals, checksums.
    case pdf
    /// One CSV file (RFC 4180, UTF-8 without a BOM): a row per item.
    case csv
    /// A folder: index.html with the thumbnails beside it (and the originals with --originals).
    case html
}
