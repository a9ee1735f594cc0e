/// How a rendition fits its box.
public enum RenditionFit: Sendable {
    /// Inside the box, aspect kept, never enlarged.
    case fit
    /// Exactly the box, centre-cropped.
    case fill
}

/// The sizes of one rendition of a stored JPEG, worked out from its declared size and EXIF
/// orientation before any byte is read, and the resize that makes it from an upright decode:
/// the arithmetic of `Thumbnailer`, which the image service and the thumbnail worker render with.
public struct RenditionPlan: Sendable {
    /// How the output fits the box.
    public let fit: RenditionFit
    /// The EXIF orientation applied, 1...8.
    public let orientation: Int
    /// The output size: what the rendition's info reports, exactly.
    public let size: (width: Int, height: Int)
    /// What the DCT-scaled decode is asked to cover, in stored (unoriented) pixels: twice the
    /// resize's source in each dimension (or the whole image), so the resize after it
    /// always reads at least two decoded pixels per output pixel and never scales up.
    public let decodeTarget: (width: Int, height: Int)

    /// The plan for a JPEG stored at `width` × `height` with `orientation` (anything outside
    /// 1...8 counts as 1, as a row without one) rendered into `box`.
    public init(width: Int, height: Int, orientation: Int, box: (width: Int, height: Int), fit: RenditionFit) {
        precondition(width > 0 && height > 0, "stored size must be positive (got \(width)×\(height))")
        precondition(box.width > 0 && box.height > 0, "box must be positive (got \(box.width)×\(box.height))")
        // Stored rows hold 1...8 for JPEG; anything else would trap in `oriented`.
        let orientation = (1...8).contains(orientation) ? orientation : 1
        let upright = JPEG.uprightSize(width: width, height: height, orientation: orientation)
        let decode = Self.decodeTarget(of: upright, box: box, fit: fit)
        self.fit = fit
        self.orientation = orientation
        self.size = Self.targetSize(of: upright, box: box, fit: fit)
        self.decodeTarget = JPEG.uprightSize(width: decode.width, height: decode.height, orientation: orientation)
    }

    /// The output size of an upright `size` in `box`: FIT scales down (never up) into the box,
    /// each edge rounded to the nearest pixel and at least 1; FILL is the box.
    public static func targetSize(
        of size: (width: Int, height: Int), box: (width: Int, height: Int), fit: RenditionFit
    ) -> (width: Int, height: Int) {
        if fit == .fill { return box }
        let scale = min(1, min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height)))
        return (max(1, Int((Double(size.width) * scale).rounded())), max(1, Int((Double(size.height) * scale).rounded())))
    }

    /// The smallest upright size the decoder must produce so that resizing an upright `size`
    /// into `box` only ever scales down, from at least twice the pixels it makes: twice FIT's
    /// scale or FILL's covering scale, never above 1, each edge rounded up.
    ///
    /// Why twice: DCT scaling filters within each 8×8 block alone, so where it does all the
    /// reduction its block seams and ringing show; the resize, which spans
    /// them, is left at least the last factor of two (as Pillow's `thumbnail` drafts to twice
    /// the size, its `reducing_gap` of 2).
    public static func decodeTarget(
        of size: (width: Int, height: Int), box: (width: Int, height: Int), fit: RenditionFit
    ) -> (width: Int, height: Int) {
        let inside = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
        let cover = max(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height))
        let scale = min(1, 2 * (fit == .fill ? cover : inside))
        return (max(1, Int((Double(size.width) * scale).rounded(.up))), max(1, Int((Double(size.height) * scale).rounded(.up))))
    }

    /// The largest box of `box`'s aspect that an upright `size` covers at its own scale:
    /// `box` when the image is at least that large, else `box` shrunk (aspect kept, each edge
    /// at least 1) until the image covers it. What FILL is when it must never enlarge.
    public static func unenlargedBox(_ box: (width: Int, height: Int), in size: (width: Int, height: Int)) -> (width: Int, height: Int) {
        let factor = min(1, min(Double(size.width) / Double(box.width), Double(size.height) / Double(box.height)))
        guard factor < 1 else { return box }
        return (
            min(size.width, max(1, Int((Double(box.width) * factor).rounded()))),
            min(size.height, max(1, Int((Double(box.height) * factor).rounded()))))
    }

    /// Resizes an upright decode to exactly `size` with Catmull-Rom (`ResampleFilter.catmullRom`):
    /// FIT from the whole picture, FILL from its centre cropped to the box's aspect.
    ///
    /// FIT is resized to `size`, worked out from the original's declared size: the DCT-scaled
    /// decode rounds its edges up, so its own aspect can be a pixel off.
    public func resize(_ upright: RGBImage) -> RGBImage {
        fit == .fill
            ? upright.filled(to: size.width, size.height, filter: .catmullRom)
            : upright.resized(width: size.width, height: size.height, filter: .catmullRom)
    }
}

extension JPEG {
    /// The size of an image stored at `width` × `height` once EXIF `orientation` is applied:
    /// width and height swap for 5...8 (`RGBImage.oriented`).
    public static func uprightSize(width: Int, height: Int, orientation: Int) -> (width: Int, height: Int) {
        orientation >= 5 && orientation <= 8 ? (height, width) : (width, height)
    }
}
