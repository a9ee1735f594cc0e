/// What a finished report holds.
public struct ClaimReportSummary: Sendable, Hashable {
    /// Where it was written.
    public var path: String
    /// Its format.
    public var format: ClaimFormat
    /// Items written.
    public var items: Int64
    /// Locations written (with "No location").
    public var sections: Int
    /// Photos attached (each attachment).
    public var photos: Int64
    /// Thumbnails shown of them (PDF, HTML).
    public var thumbnails: Int64
    /// Originals copied into an HTML export.
    public var originals: Int64
    /// PDF pages (0 for other formats).
    public var pages: Int
    /// Characters the PDF's font could not draw, by scalar value.
    public var missingCharacters: [Unicode.Scalar]
}
