@testable import JPEG
import Testing

/// The lossless crop: taken where it is exact (only a crop, YCbCr or grey, the corner on the
/// turned image's iMCU grid), the original's pixels when taken, for every EXIF orientation.
@Suite("PhotoEdit lossless")
struct PhotoEditLosslessTests {
    typealias Rect = PhotoEdit.Rect
    typealias Images = PhotoEditImages

    @Test("an aligned crop of a 4:4:4 original is lossless: its pixels are the original's, every one")
    func exactFor444() throws {
        // 4:4:4 has no chroma upsampling, so each pixel depends on its own block only.
        let source = try JPEG.encode(Images.textured(width: 203, height: 157), quality: 90, subsampling: .s444)
        let original = try JPEG.decode(source)
        for crop in [Rect(x: 16, y: 24, width: 101, height: 77), Rect(x: 8, y: 8, width: 195, height: 149), Rect(x: 200 - 8, y: 0, width: 11, height: 1)] {
            let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
            #expect(output.lossless, "\(crop)")
            #expect(image == original.cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height), "\(crop)")
            let header = try JPEG.header(of: output.data)
            #expect(header.colorSpace == .yCbCr && header.subsampling == "4:4:4")
        }
    }

    @Test("an aligned crop of a 4:2:0 photo is lossless: the original's pixels but at its edges (fancy upsampling)")
    func exactFor420InsideTheEdges() throws {
        let source = try TestImages.photo("Landscape_1.jpg")
        let crop = Rect(x: 32, y: 48, width: 333, height: 222)
        let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
        #expect(output.lossless)
        #expect(try JPEG.header(of: output.data).subsampling == "4:2:0")
        let expected = try JPEG.decode(source).cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
        // libjpeg's fancy upsampling makes each pixel's chroma from the neighbouring chroma
        // samples too; at the crop's edges the neighbours outside it are gone (the decoder
        // repeats the edge), so only the outermost pixels may differ.
        #expect(Images.inner(image) == Images.inner(expected))
        let difference = TestImages.meanAbsoluteDifference(image, expected)
        #expect(difference < 0.2, "\(difference)")
        // Sequential Huffman (SOF0) and baseline: TurboJPEG does not keep the original's process.
        #expect(TestImages.sof0Offset(in: output.data) != nil)
    }

    @Test("lossless is not taken for a corner off the iMCU grid, nor for zoom, shape or size, nor for CMYK")
    func notTaken() throws {
        let photo = try TestImages.photo("Landscape_1.jpg")
        let aligned = Rect(x: 32, y: 48, width: 333, height: 222)
        let edits: [(PhotoEdit, String)] = [
            (PhotoEdit(crop: Rect(x: 33, y: 48, width: 333, height: 222)), "x off the grid"),
            // 4:2:0: the grid is 16, so 8 is not enough.
            (PhotoEdit(crop: Rect(x: 32, y: 40, width: 333, height: 222)), "y on the 8 but not the 16 grid"),
            (PhotoEdit(crop: aligned, zoom: 1.5), "zoom"),
            (PhotoEdit(crop: aligned, shape: .square), "square"),
            (PhotoEdit(crop: aligned, shape: .circle), "circle"),
            (PhotoEdit(crop: aligned, outputSize: 333), "an output size equal to the crop's"),
        ]
        let original = try JPEG.decode(photo)
        for (edit, why) in edits {
            let (output, image) = try Images.edited(photo, edit)
            #expect(!output.lossless, "\(why)")
            if let crop = edit.crop, !edit.changesPixels {
                let difference = TestImages.meanAbsoluteDifference(
                    image, original.cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height))
                #expect(difference < 2, "\(why): \(difference)")
            }
        }
        let cmyk = try TestImages.pillow("pil_sample_cmyk.jpg")
        let cmykOutput = try PhotoEditor().edit(cmyk, PhotoEdit(crop: Rect(x: 8, y: 8, width: 40, height: 40)))
        #expect(!cmykOutput.lossless)
        // A 4:4:4 original's grid is 8.
        let fine = try JPEG.encode(Images.textured(width: 64, height: 64), quality: 90, subsampling: .s444)
        #expect(try PhotoEditor().edit(fine, PhotoEdit(crop: Rect(x: 8, y: 40, width: 8, height: 8))).lossless)
        #expect(!(try PhotoEditor().edit(fine, PhotoEdit(crop: Rect(x: 4, y: 40, width: 8, height: 8))).lossless))
    }

    /// The corners where the lossless crop starts for a 100×70 original: the strips of partial
    /// iMCUs that the turn puts at the upright left and top, worked out by hand from where each
    /// orientation takes the stored right and bottom edges. 100 mod 16 = 100 mod 8 = 4 partial
    /// columns at the right, 70 mod 16 = 70 mod 8 = 6 partial rows at the bottom, so the same
    /// for 4:2:0 (iMCU 16×16), 4:2:2 (16×8) and 4:4:4 (8×8).
    static let insets: [Int: (left: Int, top: Int)] = [
        1: (0, 0), 2: (4, 0), 3: (4, 6), 4: (0, 6), 5: (0, 0), 6: (6, 0), 7: (6, 4), 8: (0, 4),
    ]

    /// The largest difference of a lossless crop's pixel, inside its edges, from the upright
    /// decode's: none for orientation 1 (the same coefficients, the same decode), a few levels
    /// of rounding when the coefficients were flipped or transposed. Not to the bit there:
    /// libjpeg's fancy upsampling rounds the two output pixels of a chroma sample differently,
    /// so it is not symmetric under a flip, and a transposed block goes through the two passes
    /// of the IDCT the other way round, which round differently (measured: at most 2 levels for
    /// the flips, 3 for the transpositions). The outermost pixels also lose their chroma
    /// neighbours (see exactFor420InsideTheEdges), so they are left out.
    static func largestDifference(_ orientation: Int) -> Int { orientation == 1 ? 0 : 3 }

    /// Checks that `image`, the decoded output of `output`, is `expected`, the upright
    /// original's crop: within rounding when lossless (the pixels a wrong turn or corner gives
    /// differ by a hundred levels or more), exactly its re-encode at quality 90 otherwise.
    static func expectUpright(_ output: EditedPhoto, _ image: RGBImage, _ expected: RGBImage, orientation: Int, _ what: String) throws {
        if output.lossless {
            let largest = Images.maxDifference(Images.inner(image), Images.inner(expected))
            #expect(largest <= Self.largestDifference(orientation), "\(what): largest difference \(largest)")
            let difference = TestImages.meanAbsoluteDifference(image, expected)
            #expect(difference < 1, "\(what): \(difference)")
        } else {
            #expect(image == (try Images.reencoded(expected)), "\(what)")
        }
    }

    @Test(
        "for each EXIF orientation and subsampling the lossless crop is taken on the turned grid and is the upright picture's crop",
        arguments: [Subsampling.s420, .s422, .s444], 1...8)
    func everyOrientation(subsampling: Subsampling, orientation: Int) throws {
        // A 4:2:2 original turned a quarter is 4:4:0 (8×16 iMCUs), but TurboJPEG 2.1 still
        // checks the crop against 4:2:2's 16×8: the corner must be on 16×16 (LosslessCrop).
        let stored = try JPEG.encode(Images.textured(width: 100, height: 70), quality: 90, subsampling: subsampling)
        let source = Images.withOrientation(stored, UInt8(orientation))
        #expect(try JPEG.header(of: source).orientation == orientation)
        let upright = try Images.upright(source)
        let inset = try #require(Self.insets[orientation])
        let onGrid = Rect(x: inset.left + 16, y: inset.top + 16, width: 40, height: 30)
        // 16, 16 is on the stored grid, but off the turned one where the turn moved the grid.
        let naive = Rect(x: 16, y: 16, width: 40, height: 30)
        for (crop, lossless) in [(onGrid, true), (naive, inset.left == 0 && inset.top == 0)] {
            let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
            #expect(output.lossless == lossless, "\(crop)")
            let expected = upright.cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
            try Self.expectUpright(output, image, expected, orientation: orientation, "\(crop)")
            // The texture tells a crop a pixel off from the right one.
            let shifted = upright.cropped(x: crop.x + 1, y: crop.y, width: crop.width, height: crop.height)
            let wrong = TestImages.meanAbsoluteDifference(image, shifted)
            #expect(wrong > 20, "\(crop): \(wrong)")
        }
    }

    @Test("every photo of the orientation set crops losslessly on its turned grid, the picture its upright pixels show", arguments: 1...8)
    func orientationSet(orientation: Int) throws {
        let source = try TestImages.photo("Landscape_\(orientation).jpg")
        let upright = try Images.upright(source)
        // Stored 1800×1200 (1...4) or 1200×1800 (5...8) at 4:2:0: the 8 partial columns of
        // 1800 are at the upright left for 2, 3 (mirrored), 6, 7 (turned), none for the rest.
        let x = [2, 3, 6, 7].contains(orientation) ? 24 : 32
        for (left, lossless) in [(x, true), (56 - x, false)] {
            let crop = Rect(x: left, y: 32, width: 320, height: 240)
            let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
            #expect(output.lossless == lossless, "\(crop)")
            let expected = upright.cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
            try Self.expectUpright(output, image, expected, orientation: orientation, "\(crop)")
        }
    }

    @Test("a grey original crops losslessly to a grey JPEG: the original's pixels, every one")
    func grey() throws {
        let source = try TestImages.pillow("hopper_gray.jpg")
        let crop = Rect(x: 8, y: 8, width: 64, height: 61)
        let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
        #expect(output.lossless)
        #expect(try JPEG.header(of: output.data).colorSpace == .gray)
        #expect(image == (try JPEG.decode(source)).cropped(x: 8, y: 8, width: 64, height: 61))
    }

    @Test("LosslessCrop's grid: TurboJPEG's MCU per subsampling, the turned iMCU, the insets")
    func grid() throws {
        func plan(_ crop: Rect, _ orientation: Int, _ size: (Int, Int), iMCU: (Int, Int), turbo: (Int, Int)) -> Rect? {
            LosslessCrop(crop: crop, storedWidth: size.0, storedHeight: size.1, orientation: orientation, iMCU: iMCU, turboMCU: turbo)?.region
        }
        let crop = Rect(x: 16, y: 8, width: 5, height: 5)
        // 4:2:2 (16×8): on the grid upright; turned, the iMCU is 8×16 but TurboJPEG 2.1 still
        // asks for x on 16 and y on 8, so both must be on 16.
        #expect(plan(crop, 1, (64, 64), iMCU: (16, 8), turbo: (16, 8)) == crop)
        #expect(plan(crop, 5, (64, 64), iMCU: (16, 8), turbo: (16, 8)) == nil)
        #expect(plan(Rect(x: 16, y: 16, width: 5, height: 5), 5, (64, 64), iMCU: (16, 8), turbo: (16, 8)) != nil)
        // 4:2:0 of 100×70, orientation 7: 6 rows and 4 columns of partial iMCUs move out.
        #expect(plan(Rect(x: 22, y: 20, width: 5, height: 5), 7, (100, 70), iMCU: (16, 16), turbo: (16, 16)) == Rect(x: 16, y: 16, width: 5, height: 5))
        #expect(plan(Rect(x: 5, y: 4, width: 5, height: 5), 7, (100, 70), iMCU: (16, 16), turbo: (16, 16)) == nil)
        // End to end: a transposed 4:2:2 crop on the 8×16 grid but off TurboJPEG's 16 × 8 is
        // re-encoded (tjTransform would refuse it: "x must be a multiple of 16").
        let stored = try JPEG.encode(Images.textured(width: 100, height: 70), quality: 90, subsampling: .s422)
        let turned = Images.withOrientation(stored, 5)
        let offTurbo = try PhotoEditor().edit(turned, PhotoEdit(crop: Rect(x: 8, y: 16, width: 40, height: 30)))
        #expect(!offTurbo.lossless)
        #expect(try PhotoEditor().edit(turned, PhotoEdit(crop: Rect(x: 16, y: 16, width: 40, height: 30))).lossless)
        #expect(LosslessCrop.turboMCU(subsampling: "4:2:0")! == (16, 16) && LosslessCrop.turboMCU(subsampling: "unknown") == nil)
    }
}
