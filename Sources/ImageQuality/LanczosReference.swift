import Foundation
import JPEG

/// The reference a thumbnail is judged against (`ops/bench sharpness`, the sharpness tests): a
/// true Lanczos-3 resize, as Pillow's `Image.resize(…, LANCZOS)` does it, written plainly and
/// kept apart from the product's own resize (`RGBImage.resized`) so that one checks the other.
///
/// Gamma space: the 8-bit sRGB samples are filtered as they are (what Pillow, libvips and most
/// viewers do), not converted to linear light. Each axis has its own weights: output pixel `o`
/// is centred on source position `(o + ½) · scale`; when shrinking the kernel is stretched by the
/// scale (support 3 · scale source pixels), when enlarging it is not (support 3); the window is
/// clamped to the image and its weights divided by their sum, so a constant stays constant.
/// Two passes, down the columns then across the rows, in Float, rounded to 8 bits once at the
/// end (Pillow rounds between its passes and keeps 22-bit fixed-point weights, which puts it
/// within a level or two of this).
public enum LanczosReference {
    /// The Lanczos-3 window: sinc(x) · sinc(x / 3) inside (-3, 3), 0 outside.
    public static func kernel(_ x: Double) -> Double {
        if x == 0 { return 1 }
        guard abs(x) < 3 else { return 0 }
        let px = Double.pi * x
        return 3 * sin(px) * sin(px / 3) / (px * px)
    }

    /// For each output index of an axis from `source` to `destination` samples: the first source
    /// index it reads and its normalised weights.
    public static func weights(source: Int, destination: Int) -> [(first: Int, weights: [Float])] {
        precondition(source > 0 && destination > 0, "resample sizes must be positive (got \(source) → \(destination))")
        let scale = Double(source) / Double(destination)
        let stretch = max(scale, 1)
        let support = 3 * stretch
        return (0..<destination).map { output in
            let centre = (Double(output) + 0.5) * scale
            let first = max(0, Int((centre - support + 0.5).rounded(.down)))
            let end = min(source, Int((centre + support + 0.5).rounded(.down)))
            var raw = (first..<max(first + 1, end)).map { kernel((Double($0) + 0.5 - centre) / stretch) }
            let sum = raw.reduce(0, +)
            if sum != 0 { raw = raw.map { $0 / sum } } else { raw = [1] + Array(repeating: 0, count: raw.count - 1) }
            return (first, raw.map { Float($0) })
        }
    }

    /// `image` resized to exactly `width` × `height` with Lanczos-3 (both axes independently).
    public static func resized(_ image: RGBImage, width: Int, height: Int) -> RGBImage {
        precondition(width > 0 && height > 0, "resize target must be positive (got \(width)×\(height))")
        precondition(image.width > 0 && image.height > 0, "cannot resize an empty image")
        let vertical = weights(source: image.height, destination: height)
        let horizontal = weights(source: image.width, destination: width)
        let sourceRow = image.width * 3
        var column = [Float](repeating: 0, count: sourceRow)
        var output = [UInt8](repeating: 0, count: width * height * 3)
        image.pixels.withUnsafeBufferPointer { source in
            column.withUnsafeMutableBufferPointer { sum in
                for y in 0..<height {
                    // Down the columns: one row of Float at the source's width.
                    for i in 0..<sourceRow { sum[i] = 0 }
                    let (first, taps) = vertical[y]
                    for (tap, weight) in taps.enumerated() {
                        let row = (first + tap) * sourceRow
                        for i in 0..<sourceRow { sum[i] += Float(source[row + i]) * weight }
                    }
                    // Across the row, rounded once.
                    for x in 0..<width {
                        let (left, across) = horizontal[x]
                        var r: Float = 0, g: Float = 0, b: Float = 0
                        for (tap, weight) in across.enumerated() {
                            let at = (left + tap) * 3
                            r += sum[at] * weight
                            g += sum[at + 1] * weight
                            b += sum[at + 2] * weight
                        }
                        let out = (y * width + x) * 3
                        output[out] = UInt8(min(max(r.rounded(), 0), 255))
                        output[out + 1] = UInt8(min(max(g.rounded(), 0), 255))
                        output[out + 2] = UInt8(min(max(b.rounded(), 0), 255))
                    }
                }
            }
        }
        return RGBImage(width: width, height: height, pixels: output)
    }
}
