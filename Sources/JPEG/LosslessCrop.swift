/// A crop made on the DCT coefficients (tjTransform, TJXOPT_CROP) instead of decoding and
/// re-encoding: the output's pixels are the original's, at the original's quality, and turned
/// upright in the same pass (the lossless flip, rotation or transposition its EXIF orientation
/// names). It exists only where that is exact:
///
/// - the original is YCbCr or grey (not CMYK, YCCK or untransformed RGB, which the re-encode
///   turns into YCbCr), Huffman-coded (arithmetic-coded frames are re-encoded, so the output is
///   always Huffman), with sampling factors TurboJPEG names (`JPEGHeader.subsampling` not
///   "unknown");
/// - the crop's top-left corner falls on the grid of whole iMCUs (8 pixels, 16 along a
///   subsampled axis; 8 for any grey frame) of the turned image, in the coordinates the
///   transform crops in (below). Its right and bottom edges may fall anywhere.
///
/// The coordinates. A flip or rotation moves only whole iMCUs: a partial iMCU at the stored
/// image's right or bottom edge cannot go to the left or top, so TurboJPEG leaves it where it
/// was and mirrors the rest (without TJXOPT_PERFECT or TJXOPT_TRIM, transupp.c). In the turned
/// image the part that is right therefore starts `leftInset` columns and `topInset` rows
/// before the true upright image does, the strips of partial iMCUs the turn would have put
/// at its left or top; those strips cannot be had losslessly. With the stored size
/// Ws × Hs, iMCU w × h and the partial iMCUs r = Ws mod w, b = Hs mod h:
///
///     orientation   1  2  3  4  5  6  7  8
///     leftInset     0  r  r  0  0  b  b  0
///     topInset      0  0  b  b  0  0  r  r
///
/// A crop at upright (x, y) is made at (x − leftInset, y − topInset) in the turned image, which
/// must not be negative and must lie on the turned image's iMCU grid (w and h swap for 5...8),
/// and on TurboJPEG 2.1's own grid, which it takes from the stored subsampling without swapping.
struct LosslessCrop: Equatable {
    /// The crop in the coordinates tjTransform crops the turned image in.
    let region: PhotoEdit.Rect
    /// The EXIF orientation the transform turns upright, 1...8.
    let orientation: Int

    /// The lossless crop of upright `crop` for an original with `header` and `frame`; nil when
    /// there is none (see the type).
    init?(crop: PhotoEdit.Rect, header: JPEGHeader, frame: JPEGFrame) {
        guard header.colorSpace == .yCbCr || header.colorSpace == .gray, !frame.arithmetic,
            let turbo = Self.turboMCU(subsampling: header.subsampling)
        else { return nil }
        // libjpeg's iMCU: the MCU of an interleaved frame; one block for a single component,
        // whatever its sampling factors say (transupp.c does the same).
        let iMCU = frame.components.count == 1 ? (width: 8, height: 8) : (width: 8 * frame.hMax, height: 8 * frame.vMax)
        self.init(
            crop: crop, storedWidth: header.width, storedHeight: header.height, orientation: header.orientation, iMCU: iMCU,
            turboMCU: turbo)
    }

    /// The lossless crop of upright `crop` for an original stored at `storedWidth` ×
    /// `storedHeight` with EXIF `orientation`, libjpeg's `iMCU` and TurboJPEG's `turboMCU`;
    /// nil when its corner is off the grid or in a strip that cannot be turned.
    init?(
        crop: PhotoEdit.Rect, storedWidth: Int, storedHeight: Int, orientation: Int, iMCU: (width: Int, height: Int),
        turboMCU: (width: Int, height: Int)
    ) {
        precondition((1...8).contains(orientation), "EXIF orientation must be 1...8 (got \(orientation))")
        let right = storedWidth % iMCU.width, bottom = storedHeight % iMCU.height
        let (leftInset, topInset) = switch orientation {
        case 2: (right, 0)
        case 3: (right, bottom)
        case 4: (0, bottom)
        case 6: (bottom, 0)
        case 7: (bottom, right)
        case 8: (0, right)
        default: (0, 0)  // 1 and 5: nothing moves past an edge.
        }
        let x = crop.x - leftInset, y = crop.y - topInset
        let transposed = orientation >= 5
        let gridX = max(transposed ? iMCU.height : iMCU.width, turboMCU.width)
        let gridY = max(transposed ? iMCU.width : iMCU.height, turboMCU.height)
        guard x >= 0, y >= 0, x % gridX == 0, y % gridY == 0 else { return nil }
        region = PhotoEdit.Rect(x: x, y: y, width: crop.width, height: crop.height)
        self.orientation = orientation
    }

    /// TurboJPEG's MCU for a subsampling as `JPEGHeader` names it (tjMCUWidth, tjMCUHeight);
    /// nil for "unknown", which tjTransform refuses.
    static func turboMCU(subsampling: String) -> (width: Int, height: Int)? {
        switch subsampling {
        case "4:4:4", "4:0:0": (8, 8)
        case "4:2:2": (16, 8)
        case "4:2:0": (16, 16)
        case "4:4:0": (8, 16)
        case "4:1:1": (32, 8)
        default: nil
        }
    }
}
