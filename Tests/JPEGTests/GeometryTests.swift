import JPEG
import Testing

@Suite("Geometry")
struct GeometryTests {
    /// A 3×2 image whose pixel at (x, y) is [x, y, 10·y + x]:
    ///   a b c
    ///   d e f
    static let small: RGBImage = {
        var pixels: [UInt8] = []
        for y in 0..<2 {
            for x in 0..<3 { pixels += [UInt8(x), UInt8(y), UInt8(10 * y + x)] }
        }
        return RGBImage(width: 3, height: 2, pixels: pixels)
    }()

    /// The labels (10·y + x of the source) of an image, row by row.
    static func labels(_ image: RGBImage) -> [[UInt8]] {
        (0..<image.height).map { y in (0..<image.width).map { x in image.pixel(x: x, y: y).b } }
    }

    @Test("each EXIF orientation maps pixels as the EXIF specification draws it")
    func orientationsOnKnownPixels() {
        // Source:  0 1 2 / 10 11 12
        let expected: [Int: [[UInt8]]] = [
            1: [[0, 1, 2], [10, 11, 12]],
            2: [[2, 1, 0], [12, 11, 10]],  // mirror
            3: [[12, 11, 10], [2, 1, 0]],  // rotate 180
            4: [[10, 11, 12], [0, 1, 2]],  // flip vertical
            5: [[0, 10], [1, 11], [2, 12]],  // transpose
            6: [[10, 0], [11, 1], [12, 2]],  // rotate 90 clockwise
            7: [[12, 2], [11, 1], [10, 0]],  // transverse
            8: [[2, 12], [1, 11], [0, 10]],  // rotate 90 counter-clockwise
        ]
        for orientation in 1...8 {
            #expect(Self.labels(Self.small.oriented(orientation)) == expected[orientation], "orientation \(orientation)")
        }
    }

    @Test("rotating 90° clockwise then counter-clockwise gives back the original")
    func rotationsInvert() {
        let image = TestImages.gradient(width: 7, height: 5)
        #expect(image.oriented(6).oriented(8) == image)
        #expect(image.oriented(3).oriented(3) == image)
        #expect(image.oriented(5).oriented(5) == image)
    }

    @Test("cropping clamps the rectangle to the image and is empty when outside")
    func cropClamps() {
        let image = TestImages.gradient(width: 64, height: 48)
        let corner = image.cropped(x: -10, y: -10, width: 20, height: 20)
        #expect(corner.width == 10 && corner.height == 10)
        #expect(corner.pixel(x: 3, y: 4) == image.pixel(x: 3, y: 4))
        let edge = image.cropped(x: 60, y: 40, width: 100, height: 100)
        #expect(edge.width == 4 && edge.height == 8)
        #expect(edge.pixel(x: 1, y: 2) == image.pixel(x: 61, y: 42))
        let outside = image.cropped(x: 100, y: 0, width: 10, height: 10)
        #expect(outside.width == 0 && outside.height == 0 && outside.pixels.isEmpty)
    }

    @Test("shrinking averages areas, enlarging interpolates linearly")
    func resizeFilters() {
        let pair = RGBImage(width: 2, height: 1, pixels: [0, 0, 0, 255, 255, 255])
        #expect(pair.resized(width: 1, height: 1).pixels == [128, 128, 128])
        #expect(pair.resized(width: 4, height: 1).pixels.enumerated().filter { $0.offset % 3 == 0 }.map(\.element) == [0, 64, 191, 255])
        // A 3→2 shrink weighs the middle pixel half into each output.
        let triple = RGBImage(width: 3, height: 1, pixels: [0, 0, 0, 90, 90, 90, 180, 180, 180])
        #expect(triple.resized(width: 2, height: 1).pixels == [30, 30, 30, 150, 150, 150])
        let solid = TestImages.solid(width: 37, height: 23, 10, 200, 77)
        #expect(solid.resized(width: 11, height: 50) == TestImages.solid(width: 11, height: 50, 10, 200, 77))
    }

    @Test("a shrink of noise, odd sizes and a sliver included, is within one level of the area average computed directly")
    func resizeMatchesTheAreaAverageComputedDirectly() {
        // The resize runs vectorized over raw rows; this is the definition, in Double, pixel by
        // pixel: each output pixel the mean of the source area under it, partial pixels weighed
        // by their overlap. Noise, so no two samples agree by accident.
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 33)
        }
        for (source, target) in [((257, 131), (100, 37)), ((64, 64), (1, 1)), ((513, 3), (37, 1)), ((19, 300), (7, 41)), ((1000, 7), (999, 6))] {
            let image = RGBImage(width: source.0, height: source.1, pixels: (0..<source.0 * source.1 * 3).map { _ in next() })
            let resized = image.resized(width: target.0, height: target.1)
            let sx = Double(source.0) / Double(target.0), sy = Double(source.1) / Double(target.1)
            var worst = 0.0
            for y in 0..<target.1 {
                for x in 0..<target.0 {
                    for channel in 0..<3 {
                        var sum = 0.0
                        for v in Int(Double(y) * sy)..<min(source.1, Int((Double(y + 1) * sy).rounded(.up))) {
                            let wy = min(Double(v + 1), Double(y + 1) * sy) - max(Double(v), Double(y) * sy)
                            for u in Int(Double(x) * sx)..<min(source.0, Int((Double(x + 1) * sx).rounded(.up))) {
                                let wx = min(Double(u + 1), Double(x + 1) * sx) - max(Double(u), Double(x) * sx)
                                sum += wx * wy * Double(image.pixels[(v * source.0 + u) * 3 + channel])
                            }
                        }
                        let got = Double(resized.pixels[(y * target.0 + x) * 3 + channel])
                        worst = max(worst, abs(got - sum / (sx * sy)))
                    }
                }
            }
            #expect(worst <= 1, "\(source) → \(target): off by \(worst)")
        }
    }

    @Test("resized, fitted and filled give the requested dimensions")
    func dimensions() {
        let image = TestImages.gradient(width: 180, height: 120)
        let resized = image.resized(width: 30, height: 20)
        #expect(resized.width == 30 && resized.height == 20 && resized.pixels.count == 30 * 20 * 3)
        let fitted = image.fitted(within: 100, 100)
        #expect(fitted.width == 100 && fitted.height == 67)
        let fittedTall = image.fitted(within: 300, 60)
        #expect(fittedTall.width == 90 && fittedTall.height == 60)
        let filled = image.filled(to: 100, 100)
        #expect(filled.width == 100 && filled.height == 100)
        let filledWide = image.filled(to: 200, 50)
        #expect(filledWide.width == 200 && filledWide.height == 50)
    }

    @Test("filling crops the centre: the left and right thirds of a wide image are cut away")
    func fillCropsCentre() {
        // 90×30: red | green | blue thirds; a 30×30 fill keeps only green.
        var pixels: [UInt8] = []
        for _ in 0..<30 {
            for x in 0..<90 { pixels += x < 30 ? [255, 0, 0] : x < 60 ? [0, 255, 0] : [0, 0, 255] }
        }
        let filled = RGBImage(width: 90, height: 30, pixels: pixels).filled(to: 10, 10)
        #expect(filled == TestImages.solid(width: 10, height: 10, 0, 255, 0))
    }
}
