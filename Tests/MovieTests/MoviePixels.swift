import JPEG
import TestSupport

/// Pixel checks of posters against the quadrant scene (`TestMovies.quadrants`).
enum MoviePixels {
    /// The scene as a 2×2 picture, one pixel a quadrant.
    static let scene = RGBImage(width: 2, height: 2, pixels: TestMovies.quadrantColours.flatMap { [$0.r, $0.g, $0.b] })

    /// Whether each quadrant of `image` shows, at its centre, the colour of the scene turned
    /// by `orientation` (within `tolerance` a channel: x264 at its defaults, 4:2:0); the
    /// differences when not.
    static func mismatches(_ image: RGBImage, orientation: Int = 1, tolerance: Int = 40) -> [String] {
        let expected = scene.oriented(orientation)
        var found: [String] = []
        for qy in 0..<2 {
            for qx in 0..<2 {
                let x = image.width * (2 * qx + 1) / 4, y = image.height * (2 * qy + 1) / 4
                let got = image.pixel(x: x, y: y), want = expected.pixel(x: qx, y: qy)
                let far = [(got.r, want.r), (got.g, want.g), (got.b, want.b)].contains { abs(Int($0.0) - Int($0.1)) > tolerance }
                if far { found.append("quadrant (\(qx), \(qy)) at (\(x), \(y)) is \(got), expected \(want)") }
            }
        }
        return found
    }

    /// The mean of every channel of every pixel of `image`.
    static func mean(_ image: RGBImage) -> Double {
        Double(image.pixels.reduce(0) { $0 + Int($1) }) / Double(max(1, image.pixels.count))
    }
}
