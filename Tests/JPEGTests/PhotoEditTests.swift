@testable import JPEG
import Testing

/// The photo edit's pixels: crop, zoom, square and circle, output size, upright coordinates.
@Suite("PhotoEdit")
struct PhotoEditTests {
    typealias Rect = PhotoEdit.Rect
    typealias Images = PhotoEditImages

    @Test(
        "a crop keeps exactly the rectangle: its size, and each block's colour where the block lies in it",
        arguments: [(16, 16), (13, 11)])
    func cropKeepsTheRectangle(x: Int, y: Int) throws {
        let (output, image) = try Images.edited(try Images.blocksJPEG(), PhotoEdit(crop: Rect(x: x, y: y, width: 48, height: 32)))
        #expect(output.width == 48 && output.height == 32)
        // (16, 16) lies on the 8-pixel grid of the 4:4:4 original: the lossless path.
        #expect(output.lossless == (x == 16))
        // The crop spans blocks 0, 1 (top) and 3, 4 (bottom); the output column of the edge
        // between them is 32 - x, its row 32 - y. Away from the edges by 4 pixels (chroma).
        let edgeX = 32 - x, edgeY = 32 - y
        let parts: [(Rect, Int)] = [
            (Rect(x: 0, y: 0, width: edgeX - 4, height: edgeY - 4), 0),
            (Rect(x: edgeX + 4, y: 0, width: 48 - edgeX - 8, height: edgeY - 4), 1),
            (Rect(x: 0, y: edgeY + 4, width: edgeX - 4, height: 32 - edgeY - 8), 3),
            (Rect(x: edgeX + 4, y: edgeY + 4, width: 48 - edgeX - 8, height: 32 - edgeY - 8), 4),
        ]
        for (rect, block) in parts {
            let mean = Images.mean(image, rect)
            #expect(Images.near(mean, Images.blockColours[block], 6), "block \(block) in \(rect): \(mean)")
        }
        // The edges are where they belong, to the pixel: in the luma, which 4:2:0 keeps sharp.
        let row = edgeY / 2, column = edgeX / 2
        let lumas = (0..<6).map { Images.luma(Images.blockColours[$0]) }
        #expect(abs(Images.luma(image.pixel(x: edgeX - 1, y: row)) - lumas[0]) < 12, "left of the edge at \(edgeX)")
        #expect(abs(Images.luma(image.pixel(x: edgeX, y: row)) - lumas[1]) < 12, "right of the edge at \(edgeX)")
        #expect(abs(Images.luma(image.pixel(x: column, y: edgeY - 1)) - lumas[0]) < 12, "above the edge at \(edgeY)")
        #expect(abs(Images.luma(image.pixel(x: column, y: edgeY)) - lumas[3]) < 12, "below the edge at \(edgeY)")
        // And pixel for pixel: the lossless crop is the original's pixels; the re-encode is the
        // original's crop encoded as the editor does (quality 90, 4:2:0).
        let expected = try JPEG.decode(try Images.blocksJPEG()).cropped(x: x, y: y, width: 48, height: 32)
        if output.lossless {
            #expect(image == expected)
        } else {
            let difference = TestImages.meanAbsoluteDifference(image, try Images.reencoded(expected))
            #expect(difference < 0.5, "\(difference)")
        }
    }

    @Test("square keeps the crop's centred square, side its shorter edge")
    func square() throws {
        let source = try Images.blocksJPEG()
        let (output, image) = try Images.edited(source, PhotoEdit(crop: Rect(x: 10, y: 8, width: 60, height: 40), shape: .square))
        #expect(output.width == 40 && output.height == 40 && !output.lossless)
        // The centred square of 10...70 × 8...48 is 20...60 × 8...48.
        let expected = try Images.reencoded(try JPEG.decode(source).cropped(x: 20, y: 8, width: 40, height: 40))
        let difference = TestImages.meanAbsoluteDifference(image, expected)
        #expect(difference < 0.5, "\(difference)")
        // Block 0 to the left of x = 32 (output 12), block 1 right of it, block 3 below y = 32 (output 24).
        #expect(Images.near(Images.mean(image, Rect(x: 1, y: 1, width: 7, height: 18)), Images.blockColours[0], 8))
        #expect(Images.near(Images.mean(image, Rect(x: 16, y: 1, width: 22, height: 18)), Images.blockColours[1], 8))
        #expect(Images.near(Images.mean(image, Rect(x: 1, y: 28, width: 7, height: 10)), Images.blockColours[3], 8))
        // A tall crop's square is centred vertically.
        let tall = try PhotoEditor().edit(source, PhotoEdit(crop: Rect(x: 0, y: 0, width: 20, height: 64), shape: .square))
        #expect(tall.width == 20 && tall.height == 20)
    }

    @Test("circle: a square whose corners are the background (white, or the colour asked for) and whose centre is the picture")
    func circle() throws {
        let blue = PhotoEdit.Color(r: 30, g: 60, b: 200), plum = PhotoEdit.Color(r: 200, g: 30, b: 60)
        let source = try JPEG.encode(TestImages.solid(width: 80, height: 60, blue.r, blue.g, blue.b), quality: 95)
        for (background, outputSize) in [(PhotoEdit.Color.white, nil), (plum, nil), (plum, 200)] {
            var edit = PhotoEdit(shape: .circle, outputSize: outputSize)
            edit.background = background
            let (output, image) = try Images.edited(source, edit)
            let side = outputSize ?? 60
            #expect(output.width == side && output.height == side && !output.lossless)
            // The corners' squares of side × 0.1 lie wholly outside the circle (their inner
            // corner is 0.57 radii out); 4:2:0 blurs a saturated colour by more than a few
            // levels a pixel, so their means are what is compared.
            let corner = side / 10
            for (x, y) in [(0, 0), (side - corner, 0), (0, side - corner), (side - corner, side - corner)] {
                let mean = Images.mean(image, Rect(x: x, y: y, width: corner, height: corner))
                #expect(Images.near(mean, background, 8), "\(background) at (\(x), \(y)): \(mean)")
            }
            for (x, y) in [(side / 2, side / 2), (side / 2, 3), (3, side / 2), (side / 2, side - 4)] {
                #expect(Images.near(image.pixel(x: x, y: y), blue, 8), "centre at (\(x), \(y)): \(image.pixel(x: x, y: y))")
            }
        }
    }

    @Test("the circle's edge is anti-aliased: partly covered pixels are blended by coverage, the covered area is πr²")
    func circleEdgeIsBlended() {
        var image = TestImages.solid(width: 101, height: 101, 0, 0, 0)
        image.maskToInscribedCircle(background: .white)
        #expect(image.pixel(x: 50, y: 50) == (0, 0, 0) && image.pixel(x: 0, y: 0) == (255, 255, 255))
        // The coverage of each pixel is how far it is from white.
        let coverage = stride(from: 0, to: image.pixels.count, by: 3).map { 1 - Double(image.pixels[$0]) / 255 }
        let area = coverage.reduce(0, +), expected = Double.pi * 50.5 * 50.5
        #expect(abs(area - expected) / expected < 0.002, "\(area) against \(expected)")
        // A hard mask would have none between; the edge is about 2πr ≈ 317 pixels round.
        let blended = coverage.filter { $0 > 0.02 && $0 < 0.98 }.count
        #expect((200...500).contains(blended), "\(blended) partly covered pixels")
        // Symmetric about both axes.
        let left = image.pixel(x: 3, y: 30), right = image.pixel(x: 97, y: 30), below = image.pixel(x: 3, y: 70)
        #expect(left == right && left == below, "\(left) \(right) \(below)")
    }

    /// Measured: 0.60 per byte, the output's JPEG noise; the crop unzoomed differs by 38.
    @Test("zoom 2 shows the middle half of the crop at the crop's size")
    func zoomIn() throws {
        let source = try TestImages.photo("Landscape_1.jpg")
        let (output, image) = try Images.edited(source, PhotoEdit(crop: Rect(x: 300, y: 200, width: 400, height: 300), zoom: 2))
        #expect(output.width == 400 && output.height == 300 && !output.lossless)
        let original = try JPEG.decode(source)
        let expected = original.cropped(x: 400, y: 275, width: 200, height: 150).resized(width: 400, height: 300)
        let difference = TestImages.meanAbsoluteDifference(image, expected)
        #expect(difference < 2, "\(difference)")
        let unzoomed = TestImages.meanAbsoluteDifference(image, original.cropped(x: 300, y: 200, width: 400, height: 300))
        #expect(unzoomed > 20, "\(unzoomed)")
    }

    @Test("zoom 0.5 shows the picture at half size in the middle, the background around it")
    func zoomOut() throws {
        let green = PhotoEdit.Color(r: 40, g: 200, b: 60), dark = PhotoEdit.Color(r: 10, g: 10, b: 10)
        let source = try JPEG.encode(TestImages.solid(width: 64, height: 48, green.r, green.g, green.b), quality: 95)
        var edit = PhotoEdit(zoom: 0.5)
        edit.background = dark
        let (output, image) = try Images.edited(source, edit)
        #expect(output.width == 64 && output.height == 48 && !output.lossless)
        // The picture fills 16..<48 × 12..<36.
        for (x, y) in [(32, 24), (19, 15), (44, 32), (19, 32), (44, 15)] {
            #expect(Images.near(image.pixel(x: x, y: y), green, 10), "(\(x), \(y)): \(image.pixel(x: x, y: y))")
        }
        for (x, y) in [(2, 2), (61, 45), (12, 24), (52, 24), (32, 8), (32, 40)] {
            #expect(Images.near(image.pixel(x: x, y: y), dark, 10), "(\(x), \(y)): \(image.pixel(x: x, y: y))")
        }
    }

    @Test("zooming out of a crop shows the picture around it, the background only beyond the image's edge")
    func zoomOutAtTheCorner() throws {
        // Crop 0,0,32,24 of the blocks at zoom 0.5: the region is -16..<48 × -12..<36, shown at
        // 32×24, so the picture fills 8..<32 × 6..<24, with block 1 (x ≥ 32) right of column 24.
        let (output, image) = try Images.edited(
            try Images.blocksJPEG(), PhotoEdit(crop: Rect(x: 0, y: 0, width: 32, height: 24), zoom: 0.5))
        #expect(output.width == 32 && output.height == 24)
        #expect(Images.near(Images.mean(image, Rect(x: 0, y: 0, width: 6, height: 24)), .white, 6))
        #expect(Images.near(Images.mean(image, Rect(x: 0, y: 0, width: 32, height: 5)), .white, 6))
        #expect(Images.near(Images.mean(image, Rect(x: 10, y: 8, width: 12, height: 14)), Images.blockColours[0], 8))
        #expect(Images.near(Images.mean(image, Rect(x: 26, y: 8, width: 6, height: 14)), Images.blockColours[1], 8))
    }

    @Test("outputSize is the longest edge, the aspect kept, shrinking or enlarging, at least 1 pixel a side")
    func outputSize() throws {
        let source = try TestImages.photo("Landscape_1.jpg")
        let original = try JPEG.decode(source)
        let cases: [(Rect, Int, (Int, Int))] = [
            (Rect(x: 100, y: 100, width: 600, height: 300), 200, (200, 100)),
            (Rect(x: 100, y: 100, width: 300, height: 600), 200, (100, 200)),
            (Rect(x: 10, y: 10, width: 50, height: 25), 400, (400, 200)),
            (Rect(x: 0, y: 0, width: 1800, height: 3), 100, (100, 1)),
            (Rect(x: 0, y: 0, width: 1800, height: 1200), 8192, (8192, 5461)),
        ]
        for (crop, size, expected) in cases {
            let (output, image) = try Images.edited(source, PhotoEdit(crop: crop, outputSize: size))
            #expect((output.width, output.height) == expected && !output.lossless, "\(crop) at \(size): \(output.width)×\(output.height)")
            guard size < 1000 else { continue }
            let reference = original.cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
                .resized(width: expected.0, height: expected.1)
            // Measured: 0.2 to 2.4 (the 100×1 strip), the output's JPEG noise.
            let difference = TestImages.meanAbsoluteDifference(image, reference)
            #expect(difference < 3, "\(crop) at \(size): \(difference)")
        }
        let square = try PhotoEditor().edit(source, PhotoEdit(crop: Rect(x: 0, y: 0, width: 300, height: 200), shape: .square, outputSize: 64))
        #expect(square.width == 64 && square.height == 64)
    }

    /// Measured: 7.3 (re-encoded) and 6.7 (lossless) per byte against `Landscape_1`'s pixels
    /// in these rectangles, where the two files' own pixels differ by 6.7 (each saved with its
    /// own compression; 3.7 over the whole picture). A crop one pixel off differs by 11.2, one
    /// 8 pixels off by 20, the stored (unturned) pixels by 94, and the output of an editor that
    /// skipped the orientation (run once so) by 94 too.
    static let uprightThreshold = 9.0
    static let wrongThreshold = 40.0

    @Test(
        "an EXIF-6 photo is cropped in upright coordinates: the same rectangle as the upright photo's",
        arguments: [Rect(x: 500, y: 300, width: 640, height: 480), Rect(x: 520, y: 304, width: 640, height: 480)])
    func exifSixCropIsUpright(crop: Rect) throws {
        let source = try TestImages.photo("Landscape_6.jpg")
        #expect(try JPEG.header(of: source).orientation == 6)
        let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
        #expect(output.width == 640 && output.height == 480)
        // Stored 1200×1800 4:2:0: the quarter turn leaves 1800 mod 16 = 8 columns at the upright
        // left, so the lossless grid is at x = 8 + 16k (520), y = 16k (304).
        #expect(output.lossless == (crop.x == 520))
        let reference = try JPEG.decode(try TestImages.photo("Landscape_1.jpg"))
            .cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
        let difference = TestImages.meanAbsoluteDifference(image, reference)
        #expect(difference < Self.uprightThreshold, "\(difference)")
        // The same rectangle of the stored pixels, which a crop that ignored the orientation takes.
        let stored = try JPEG.decode(source).cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
        let wrong = TestImages.meanAbsoluteDifference(stored, reference)
        #expect(wrong > Self.wrongThreshold, "\(wrong)")
    }

    @Test("an identity edit is a lossless copy where the crop at (0, 0) is exact, a re-encode of the upright picture elsewhere")
    func identity() throws {
        #expect(PhotoEdit().isIdentity)
        #expect(!PhotoEdit(crop: Rect(x: 0, y: 0, width: 5, height: 5)).isIdentity && !PhotoEdit(zoom: 2).isIdentity)
        #expect(PhotoEdit(background: .init(r: 1, g: 2, b: 3), quality: 50).isIdentity)
        let upright = try TestImages.photo("Landscape_1.jpg")
        let (copy, copied) = try Images.edited(upright, PhotoEdit())
        #expect(copy.lossless && copy.width == 1800 && copy.height == 1200)
        #expect(copied == (try JPEG.decode(upright)))
        // Orientation 6 leaves 8 columns at the upright left that the turn cannot move.
        let (turned, image) = try Images.edited(try TestImages.photo("Landscape_6.jpg"), PhotoEdit())
        #expect(!turned.lossless && turned.width == 1800 && turned.height == 1200)
        let difference = TestImages.meanAbsoluteDifference(image, copied)
        #expect(difference < Self.uprightThreshold, "\(difference)")
    }

    @Test("the layout never makes more than the image or the output, whatever the zoom")
    func layoutOfExtremeZooms() {
        let crop = Rect(x: 100, y: 50, width: 200, height: 100)
        let tiny = EditLayout(PhotoEdit(crop: crop, zoom: .leastNonzeroMagnitude), crop: crop, imageWidth: 400, imageHeight: 300)
        #expect(tiny.width == 200 && tiny.height == 100)
        #expect(tiny.destination.width == 1 && tiny.destination.height == 1)
        #expect(tiny.source == Rect(x: 0, y: 0, width: 400, height: 300))
        let close = EditLayout(PhotoEdit(crop: crop, zoom: 64), crop: crop, imageWidth: 400, imageHeight: 300)
        #expect(close.destination == Rect(x: 0, y: 0, width: 200, height: 100))
        // 200 / 64 = 3.125 pixels about x = 200: 198.4...201.6, snapped to 198..<202.
        #expect(close.source == Rect(x: 198, y: 99, width: 4, height: 2))
        let one = Rect(x: 0, y: 0, width: 1, height: 1)
        let pixel = EditLayout(PhotoEdit(crop: one, zoom: 64), crop: one, imageWidth: 400, imageHeight: 300)
        #expect(pixel.source == one && pixel.destination == one)
    }
}
