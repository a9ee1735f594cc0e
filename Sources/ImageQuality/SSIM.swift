import Foundation
import JPEG

/// The structural similarity (SSIM, Wang, Bovik, Sheikh and Simoncelli 2004) of two images'
/// luma, as scikit-image's `structural_similarity(x, y, gaussian_weights=True, sigma=1.5,
/// use_sample_covariance=False, data_range=255)` computes it:
///
/// - luma is BT.601 Y = 0.299 R + 0.587 G + 0.114 B of the 8-bit (gamma) samples, unrounded;
/// - local means, variances and the covariance under an 11×11 Gaussian window of σ = 1.5
///   (radius 5, weights normalised: scipy's `gaussian_filter` with `truncate=3.5`);
/// - C1 = (0.01 · 255)², C2 = (0.03 · 255)²;
/// - the mean of the SSIM map over the positions where the whole window lies inside the image
///   (scikit-image filters the whole image, then crops 5 pixels off each edge: the same pixels).
///
/// An image under 11 pixels on an edge (a 64 FIT of a panorama) has no such position: its SSIM is
/// then the one window of the whole image, every pixel weighted alike.
public enum SSIM {
    /// The window's radius: 11 × 11.
    public static let radius = 5
    /// The Gaussian's standard deviation.
    public static let sigma = 1.5

    /// BT.601 luma of each pixel, row by row.
    public static func luma(_ image: RGBImage) -> [Double] {
        (0..<(image.width * image.height)).map { (i: Int) -> Double in
            let r = Double(image.pixels[3 * i]), g = Double(image.pixels[3 * i + 1]), b = Double(image.pixels[3 * i + 2])
            return 0.299 * r + 0.587 * g + 0.114 * b
        }
    }

    /// The mean SSIM of the luma of two images of the same size, in -1...1 (1: identical).
    public static func luma(_ a: RGBImage, _ b: RGBImage) -> Double {
        precondition(a.width == b.width && a.height == b.height, "SSIM needs images of one size (got \(a.width)×\(a.height) and \(b.width)×\(b.height))")
        precondition(a.width > 0 && a.height > 0, "SSIM of an empty image")
        return of(luma(a), luma(b), width: a.width, height: a.height)
    }

    /// The mean SSIM of two planes of `width` × `height` samples in 0...255.
    public static func of(_ x: [Double], _ y: [Double], width: Int, height: Int) -> Double {
        let c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255)
        let window = 2 * radius + 1
        guard width >= window, height >= window else {
            // One window over the whole image, uniform weights.
            let n = Double(x.count)
            let mx = x.reduce(0, +) / n, my = y.reduce(0, +) / n
            var vx = 0.0, vy = 0.0, cxy = 0.0
            for i in x.indices {
                vx += (x[i] - mx) * (x[i] - mx)
                vy += (y[i] - my) * (y[i] - my)
                cxy += (x[i] - mx) * (y[i] - my)
            }
            vx /= n; vy /= n; cxy /= n
            return ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        }
        var g = (-radius...radius).map { exp(-0.5 * Double($0 * $0) / (sigma * sigma)) }
        let total = g.reduce(0, +)
        g = g.map { $0 / total }
        let xx = zip(x, x).map(*), yy = zip(y, y).map(*), xy = zip(x, y).map(*)
        let planes = [x, y, xx, yy, xy].map { blurredValid($0, width: width, height: height, weights: g) }
        var sum = 0.0
        for i in planes[0].indices {
            let mx = planes[0][i], my = planes[1][i]
            let vx = planes[2][i] - mx * mx, vy = planes[3][i] - my * my, cxy = planes[4][i] - mx * my
            sum += ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        }
        return sum / Double(planes[0].count)
    }

    /// `plane` filtered by the separable `weights` at each position where they fit inside it:
    /// (width − 2r) × (height − 2r) values.
    static func blurredValid(_ plane: [Double], width: Int, height: Int, weights: [Double]) -> [Double] {
        let outWidth = width - 2 * radius, outHeight = height - 2 * radius
        var across = [Double](repeating: 0, count: outWidth * height)
        for row in 0..<height {
            for x in 0..<outWidth {
                var s = 0.0
                for (k, w) in weights.enumerated() { s += plane[row * width + x + k] * w }
                across[row * outWidth + x] = s
            }
        }
        var out = [Double](repeating: 0, count: outWidth * outHeight)
        for row in 0..<outHeight {
            for (k, w) in weights.enumerated() {
                let source = (row + k) * outWidth, target = row * outWidth
                for x in 0..<outWidth { out[target + x] += across[source + x] * w }
            }
        }
        return out
    }
}
