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

    /// Bytes a pixel the decode is charged: image-service's peak rose by 392 MB rendering an
    /// 8064×6048 HEIC (8.0 a pixel: libde265's pictures, libheif's YCbCr and interleaved RGB
    /// images, and the copy into an `RGBImage`'s buffer) after an upload had grown its heap.
    /// From a trimmed heap (VmHWM reset) a put or a rendition rises more: 11.6 a pixel at
    /// 4032×3024, 10.2 at 8064×6048, 13.9 for a 10-bit HEIC at 4032×3024 (libheif's planes are
    /// 16-bit); so the byte limit admits a peak up to about 1.45 times its figure (1.75 for
    /// 10-bit). With alpha, 3 more (the alpha plane, and 4-byte RGBA in place of RGB in both
    /// the image and its copy).
    public var decodedBytesPerPixel: Int { hasAlpha ? 11 : 8 }

    /// What the decode holds at its peak: `codedWidth` × `codedHeight` × `decodedBytesPerPixel`.
    public var decodedBytes: Int { codedWidth * codedHeight * decodedBytesPerPixel }
}
