/// Options of a claim report beyond its scope.
public struct ClaimReportOptions: Sendable, Hashable {
    /// The as-of date: "today" or YYYY-MM-DD.
    public var asOf: String
    /// The cover's fields given on the command line.
    public var cover: ClaimCoverOverrides
    /// HTML: also copy every original (`originals/<sha256>.<ext>`), linked from its thumbnail.
    public var originals: Bool

    /// Options with the given values.
    public init(asOf: String = "today", cover: ClaimCoverOverrides = ClaimCoverOverrides(), originals: Bool = false) {
        self.asOf = asOf
        self.cover = cover
        self.originals = originals
    }
}
