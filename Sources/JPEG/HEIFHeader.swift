/// What a HEIC/HEIF's primary image declares, read from its boxes without decoding a pixel
/// (`HEIF.header(of:options:)`).
public struct HEIFHeader: Sendable, Equatable {
    /// Width as coded (the primary item's `ispe`), before its transformations.
    public let codedWidth: Int
    /// Height as coded (`ispe`).
    public let codedHeight: Int
    /// Width as displayed: after the item's `irot`, `imir` and `clap`, as libheif decodes it.
    /// This is what a HEIC reports as its width: the picture is upright as decoded.
    public let width: Int
    /// Height as displayed.
    public let height: Int
    /// Whether the primary image has an alpha plane (composited on a background when rendered).
    public let hasAlpha: Bool
    /// Bits per luma sample (8 for most; 10 for HDR captures, reduced to 8 when decoded).
    public let lumaBits: Int
    /// Whether it carries an ICC profile (`colr` of type `prof` or `rICC`).
    public let hasICCProfile: Bool

    /// Bytes a pixel of the decode holds at its peak: libheif's interleaved RGB (3, or 4 with
    /// alpha) and its copy into an `RGBImage`'s buffer (as many) while the first is still held.
    /// libheif's YCbCr planes (1.5 a pixel at 4:2:0, 3 at 4:4:4) are freed once converted,
    /// before the copy is made.
    public var decodedBytesPerPixel: Int { hasAlpha ? 8 : 6 }

    /// What the decode holds at its peak: `codedWidth` × `codedHeight` × `decodedBytesPerPixel`.
    public var decodedBytes: Int { codedWidth * codedHeight * decodedBytesPerPixel }
}
