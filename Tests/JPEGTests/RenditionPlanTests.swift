import JPEG
import Testing

/// The rendition arithmetic: output size, decode target and orientation, before any byte is read.
@Suite struct RenditionPlanTests {
    /// Stored size, box, then FIT's size and decode target and FILL's decode target, all upright.
    static let sizes: [((Int, Int), (Int, Int), fit: (Int, Int), fitDecode: (Int, Int), fillDecode: (Int, Int))] = [
        ((4000, 3000), (333, 333), (333, 250), (333, 250), (444, 333)),
        ((3000, 4000), (333, 333), (250, 333), (250, 333), (333, 444)),
        // Odd sizes: FIT rounds to the nearest pixel, the decode target rounds up.
        ((1001, 333), (100, 100), (100, 33), (100, 34), (301, 100)),
        ((1001, 333), (64, 48), (64, 21), (64, 22), (145, 48)),
        ((333, 1001), (64, 48), (16, 48), (16, 48), (64, 193)),
        // Never enlarged, and never below one pixel.
        ((100, 50), (1000, 1000), (100, 50), (100, 50), (100, 50)),
        ((10000, 10), (100, 100), (100, 1), (100, 1), (10000, 10)),
        ((997, 13), (5, 5), (5, 1), (5, 1), (384, 5)),
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
        #expect(fit.decodeTarget == (swapped ? (48, 16) : (64, 22)))
        let fill = RenditionPlan(width: 1001, height: 333, orientation: orientation, box: (64, 48), fit: .fill)
        #expect(fill.size == (64, 48))
        #expect(fill.decodeTarget == (swapped ? (193, 64) : (145, 48)))
    }

    @Test(arguments: [0, 9, -1, 100])
    func anOrientationOutsideOneToEightCountsAsOne(orientation: Int) {
        let plan = RenditionPlan(width: 1001, height: 333, orientation: orientation, box: (64, 48), fit: .fit)
        #expect(plan.orientation == 1 && plan.size == (64, 21) && plan.decodeTarget == (64, 22))
        #expect(JPEG.uprightSize(width: 1001, height: 333, orientation: orientation) == (1001, 333))
    }

    @Test(arguments: 1...8)
    func aPlannedRenditionIsExactlyItsSizeAndUpright(orientation: Int) throws {
        let data = try TestImages.photo("Landscape_\(orientation).jpg")
        let header = try JPEG.header(of: data)
        for fit in [RenditionFit.fit, .fill] {
            let plan = RenditionPlan(width: header.width, height: header.height, orientation: header.orientation, box: (120, 120), fit: fit)
            let upright = try data.withUnsafeBytes { buffer throws(JPEGError) in try plan.decode(buffer, options: DecodeOptions()) }
            // The DCT-scaled decode covers the output, upright, before it is resized.
            #expect(upright.width >= plan.size.width && upright.height >= plan.size.height, "\(orientation) \(fit)")
            #expect(upright.width > upright.height, "\(orientation) \(fit): a landscape decodes landscape")
            let rendition = try JPEG.header(of: try plan.encode(upright))
            #expect(rendition.width == plan.size.width && rendition.height == plan.size.height, "\(orientation) \(fit)")
        }
        #expect(RenditionPlan(width: header.width, height: header.height, orientation: header.orientation, box: (120, 120), fit: .fit).size == (120, 80))
    }
}
