/// The JPEG a photo edit made.
public struct EditedPhoto: Sendable {
    /// The JPEG: upright (no EXIF orientation to apply), no metadata but the original's ICC profile.
    public let data: [UInt8]
    /// Its width in pixels.
    public let width: Int
    /// Its height in pixels.
    public let height: Int
    /// Made on the DCT coefficients (`LosslessCrop`): the original's pixels, not re-encoded.
    public let lossless: Bool
}
