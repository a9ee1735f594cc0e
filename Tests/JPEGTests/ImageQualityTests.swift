import Foundation
import ImageQuality
import JPEG
import Testing

/// The measuring tools of `ops/bench sharpness` (issue 31, item 4) checked against known
/// implementations: SSIM against scikit-image's, the reference Lanczos-3 on a constant image.
@Suite("ImageQuality")
struct ImageQualityTests {
    @Test("SSIM matches scikit-image's structural_similarity (Gaussian σ 1.5, data range 255) on known planes")
    func ssimMatchesScikitImage() {
        let (width, height) = (32, 24)
        func plane(_ value: (Int, Int) -> Double) -> [Double] {
            (0..<height).flatMap { i in (0..<width).map { j in value(i, j) } }
        }
        // Values from skimage.metrics.structural_similarity 0.26 on the same formulas (numpy mgrid i, j).
        let x = plane { i, j in Double((i * 7 + j * 13) % 256) }, y = plane { i, j in Double((i * 11 + j * 5) % 256) }
        #expect(abs(SSIM.of(x, y, width: width, height: height) - 0.203996571672277) < 1e-9)
        let smooth = plane { i, j in 128 + 100 * sin(Double(j) / 3) * cos(Double(i) / 5) }
        let noisy = plane { i, j in 128 + 100 * sin(Double(j) / 3) * cos(Double(i) / 5) + Double((i * j) % 7 - 3) }
        #expect(abs(SSIM.of(smooth, noisy, width: width, height: height) - 0.9961425426131091) < 1e-9)
        #expect(SSIM.of(x, x, width: width, height: height) == 1)
    }
}

extension ImageQualityTests {
    @Test("the reference Lanczos-3 keeps a constant image constant, and its weights sum to one")
    func referenceKeepsAConstantImage() {
        let image = RGBImage(width: 64, height: 48, pixels: [UInt8](repeating: 77, count: 64 * 48 * 3))
        let shrunk = LanczosReference.resized(image, width: 16, height: 12)
        #expect(shrunk.width == 16 && shrunk.height == 12)
        #expect(shrunk.pixels.allSatisfy { $0 == 77 })
        for (_, weights) in LanczosReference.weights(source: 64, destination: 16) {
            #expect(abs(weights.reduce(0, +) - 1) < 1e-5)
        }
    }
}
