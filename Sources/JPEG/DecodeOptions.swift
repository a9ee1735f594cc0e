/// Limits and speed trade-offs for reading untrusted JPEGs and PNGs.
public struct DecodeOptions: Sendable {
    /// The largest width × height accepted; checked from the header before any pixel is allocated.
    public var maxPixels: Int = 100_000_000
    /// Refuse progressive JPEGs with more than 500 scans (TJFLAG_LIMITSCANS), a known CPU-exhaustion attack.
    public var limitScans: Bool = true
    /// Use the faster, slightly less accurate integer DCT (TJFLAG_FASTDCT).
    public var fastDCT: Bool = false
    /// The most marker segments a JPEG may have: real files have a few dozen (extended XMP of
    /// 8 MB is 128), while libjpeg spends ~45 ns on each, so a file of nothing but tiny
    /// segments would cost far more CPU than its size suggests.
    public var maxSegments: Int = 65_536
    /// The most extraneous bytes (bytes between marker segments that belong to none, which
    /// libjpeg skips with a warning) a JPEG may have in all; 0 refuses any. Writers' slips
    /// leave 1 to 16 of them (a segment's length off by a few, a Photoshop resource run past
    /// its segment); 64 KiB is all a segment can hold, so what a writer that got one length
    /// wrong leaves behind fits, while megabytes of stray bytes posing as a JPEG do not.
    public var maxExtraneousBytes: Int = DecodeOptions.defaultMaxExtraneousBytes
    /// The largest pixel buffer a PNG is decoded into (`PNGHeader.decodedBytes`: width × height
    /// × 4), checked from its header before anything is inflated. A PNG cannot be decoded at a
    /// reduced scale as a JPEG is, so this bounds what a small file that inflates to a huge
    /// picture (a decompression bomb) can make a decode hold. The maxSegments limit counts a
    /// PNG's chunks. A HEIC's decode is held to it as well (`HEIFHeader.decodedBytes`, 8 bytes
    /// a pixel of its coded size as measured, 11 with alpha).
    public var maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes

    /// The default of `maxExtraneousBytes`: 65,536.
    public static let defaultMaxExtraneousBytes = 65_536
    /// The default of `maxDecodedBytes`: 256 MiB: a PNG of 67 megapixels (an A4 page scanned at 600 dpi is 35).
    public static let defaultMaxDecodedBytes = 256 << 20

    /// Creates options; every parameter has the safe default.
    public init(
        maxPixels: Int = 100_000_000, limitScans: Bool = true, fastDCT: Bool = false, maxSegments: Int = 65_536,
        maxExtraneousBytes: Int = DecodeOptions.defaultMaxExtraneousBytes,
        maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes
    ) {
        precondition(maxDecodedBytes > 0, "maxDecodedBytes must be positive (got \(maxDecodedBytes))")
        self.maxDecodedBytes = maxDecodedBytes
        precondition(maxPixels > 0, "maxPixels must be positive (got \(maxPixels))")
        precondition(maxSegments > 0, "maxSegments must be positive (got \(maxSegments))")
        precondition(maxExtraneousBytes >= 0, "maxExtraneousBytes must not be negative (got \(maxExtraneousBytes))")
        self.maxSegments = maxSegments
        self.maxExtraneousBytes = maxExtraneousBytes
        self.maxPixels = maxPixels
        self.limitScans = limitScans
        self.fastDCT = fastDCT
    }
}
