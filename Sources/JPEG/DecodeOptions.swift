/// Limits and speed trade-offs for reading untrusted JPEGs.
public struct DecodeOptions: Sendable {
    /// The largest width × height accepted; checked from the header before any pixel is allocated.
    public var maxPixels: Int = 100_000_000
    /// Refuse progressive JPEGs with more than 500 scans (TJFLAG_LIMITSCANS), a known CPU-exhaustion attack.
    public var limitScans: Bool = true
    /// Use the faster, slightly less accurate integer DCT (TJFLAG_FASTDCT).
    public var fastDCT: Bool = false

    /// Creates options; every parameter has the safe default.
    public init(maxPixels: Int = 100_000_000, limitScans: Bool = true, fastDCT: Bool = false) {
        precondition(maxPixels > 0, "maxPixels must be positive (got \(maxPixels))")
        self.maxPixels = maxPixels
        self.limitScans = limitScans
        self.fastDCT = fastDCT
    }
}
