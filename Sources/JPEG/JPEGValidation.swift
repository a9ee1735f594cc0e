/// What `JPEG.validate` found: the header, and how far the structure vouches for the image.
public struct JPEGValidation: Sendable, Equatable {
    /// The header, as `JPEG.header(of:)` reads it.
    public let header: JPEGHeader
    /// How many scans the image has (1 for most sequential JPEGs, several for progressive ones).
    public let scans: Int
    /// The offset just past EOI; bytes after it (a camera's trailer, a motion photo's video)
    /// are not part of the image.
    public let end: Int
    /// Whether the size of every scan's entropy-coded data was checked against its blocks.
    /// False for arithmetic-coded frames, which have no such bounds: only a decode tells
    /// whether their data is complete.
    public let entropyDataChecked: Bool
    /// Extraneous bytes between marker segments: bytes that belong to no segment, which
    /// decoders skip with a warning ("Corrupt JPEG data: 5 extraneous bytes before marker
    /// 0xdb") and `JPEG.decode` skips without one. 0 for a well-formed file.
    public let extraneousBytes: Int
    /// The runs of extraneous bytes (each ends at a marker); 0 for a well-formed file.
    public let extraneousRuns: Int
    /// Where the first run of extraneous bytes starts; nil when there is none.
    public let firstExtraneousOffset: Int?

    /// Creates a validation result from its parts.
    public init(
        header: JPEGHeader, scans: Int, end: Int, entropyDataChecked: Bool,
        extraneousBytes: Int = 0, extraneousRuns: Int = 0, firstExtraneousOffset: Int? = nil
    ) {
        self.header = header
        self.scans = scans
        self.end = end
        self.entropyDataChecked = entropyDataChecked
        self.extraneousBytes = extraneousBytes
        self.extraneousRuns = extraneousRuns
        self.firstExtraneousOffset = firstExtraneousOffset
    }
}
