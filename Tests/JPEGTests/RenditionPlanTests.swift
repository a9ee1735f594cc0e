import JPEG
import Testing

/// The rendition arithmetic: output size, decode target and orientation, before any byte is read.
@Suite struct RenditionPlanTests {
    /// Stored size, box, then FIT's size and decode target and FILL's decode target, all upright.
    static let sizes: [((Int, Int), (Int, Int), fit: (Int, Int), fitDecode: (Int, Int), fillDecode: (Int, Int))] = [
        ((4000, 3000), (333, 333), (333, 250), (666, 500), (888, 666)),
        ((3000, 4000), (333, 333), (250, 333), (500, 666), (666, 888)),
        // Odd sizes: FIT rounds to the nearest pixel, the decode target (twice the scale) rounds up.
        ((1001, 333), (100, 100), (100, 33), (200, 67), (602, 200)),
        ((1001, 333), (64, 48), (64, 21), (128, 43), (289, 96)),
        ((333, 1001), (64, 48), (16, 48), (32, 96), (128, 385)),
        // Never enlarged, never decoded above the stored size, never below one pixel.
        ((100, 50), (1000, 1000), (100, 50), (100, 50), (100, 50)),
        ((10000, 10), (100, 100), (100, 1), (200, 1), (10000, 10)),
        ((997, 13), (5, 5), (5, 1), (10, 1), (767, 10)),
    ]

    @Test func fitAndFillSizesAndDecodeTargetsAtOddSizes() {
        for (size, box, fit, fitDecode, fillDecode) in Self.sizes {
            let label = "\(size) in \(box)"
            let fitSize = RenditionPlan.targetSize(of: size, box: box, fit: .fit)
            let fillSize = RenditionPlan.targetSize(of: size, box: box, fit: .fill)
            let fitTarget = RenditionPlan.decodeTarget(of: size, box: box, fit: .fit)
            let fillTarget = RenditionPlan.decodeTarget(of: size, box: box, fit: .fill)
            #expect(fitSize == fit, "\(label)")
            #expect(fillSize == box, "\(label)")
            #expect(fitTarget == fitDecode, "\(label)")
            #expect(fillTarget == fillDecode, "\(label)")
        }
    }

    @Test(arguments: 1...8)
    func orientationsFiveToEightSwapTheUprightSizeAndTheStoredDecodeTarget(orientation: Int) {
        let swapped = orientation >= 5
        #expect(JPEG.uprightSize(width: 1001, height: 333, orientation: orientation) == (swapped ? (333, 1001) : (1001, 333)))
        // Stored 1001×333: upright it is 333×1001 for 5...8.
        let fit = RenditionPlan(width: 1001, height: 333, orientation: orientation, box: (64, 48), fit: .fit)
        #expect(fit.orientation == orientation && fit.fit == .fit)
        #expect(fit.size == (swapped ? (16, 48) : (64, 21)))
        #expect(fit.decodeTarget == (swapped ? (96, 32) : (128, 43)))
        let fill = RenditionPlan(width: 1001, height: 333, orientation: orientation, box: (64, 48), fit: .fill)
        #expect(fill.size == (64, 48))
        #expect(fill.decodeTarget == (swapped ? (385, 128) : (289, 96)))
    }

    @Test(arguments: [0, 9, -1, 100])
    func anOrientationOutsideOneToEightCountsAsOne(orientation: Int) {
        let plan = RenditionPlan(width: 1001, height: 333, orientation: orientation, box: (64, 48), fit: .fit)
        #expect(plan.orientation == 1 && plan.size == (64, 21) && plan.decodeTarget == (128, 43))
        #expect(JPEG.uprightSize(width: 1001, height: 333, orientation: orientation) == (1001, 333))
    }

    @Test func aBoxLargerThanThePictureShrinksAspectKeptToWhatThePictureCovers() {
        #expect(RenditionPlan.unenlargedBox((64, 64), in: (1800, 1200)) == (64, 64))
        #expect(RenditionPlan.unenlargedBox((256, 256), in: (100, 50)) == (50, 50))
        #expect(RenditionPlan.unenlargedBox((64, 64), in: (100, 50)) == (50, 50))
        #expect(RenditionPlan.unenlargedBox((300, 100), in: (120, 80)) == (120, 40))
        #expect(RenditionPlan.unenlargedBox((1000, 10), in: (50, 50)) == (50, 1))
    }

    @Test(arguments: 1...8)
    func aPlannedRenditionIsExactlyItsSizeAndUpright(orientation: Int) throws {
        let data = try TestImages.photo("Landscape_\(orientation).jpg")
        let header = try JPEG.header(of: data)
        for fit in [RenditionFit.fit, .fill] {
            let plan = RenditionPlan(width: header.width, height: header.height, orientation: header.orientation, box: (120, 120), fit: fit)
            let upright = try JPEG.decode(data, targetSize: plan.decodeTarget).oriented(plan.orientation)
            // The DCT-scaled decode covers twice the output, upright, before it is resized.
            #expect(upright.width >= 2 * plan.size.width && upright.height >= 2 * plan.size.height, "\(orientation) \(fit)")
            #expect(upright.width > upright.height, "\(orientation) \(fit): a landscape decodes landscape")
            let resized = plan.resize(upright)
            #expect(resized.width == plan.size.width && resized.height == plan.size.height, "\(orientation) \(fit)")
        }
        #expect(RenditionPlan(width: header.width, height: header.height, orientation: header.orientation, box: (120, 120), fit: .fit).size == (120, 80))
    }
}

/// The DCT scale a decode picks: the smallest of 1/2, 1/4 and 1/8 that still covers the target.
@Suite struct DecodeScaleTests {
    /// Target, then the size decoded from a 256×160 JPEG.
    static let cases: [((Int, Int), (Int, Int))] = [
        // 7/8 (224×140) would cover it, but is not one of the SIMD scales: the whole image.
        ((224, 140), (256, 160)),
        ((129, 80), (256, 160)),
        ((128, 80), (128, 80)),
        // 3/8 (96×60) is too small for 100 and not used for 90 either.
        ((100, 60), (128, 80)),
        ((90, 56), (128, 80)),
        ((33, 20), (64, 40)),
        ((32, 20), (32, 20)),
        ((1, 1), (32, 20)),
    ]

    @Test func theSmallestOfHalfQuarterAndEighthThatCovers() throws {
        let jpeg = try JPEG.encode(RGBImage(width: 256, height: 160, pixels: [UInt8](repeating: 128, count: 256 * 160 * 3)))
        for (target, expected) in Self.cases {
            let decoded = try JPEG.decode(jpeg, targetSize: target)
            #expect((decoded.width, decoded.height) == expected, "target \(target)")
        }
    }
}
