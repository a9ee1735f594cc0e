/// An 8-bit RGB image: row-major, 3 bytes per pixel, no row padding.
public struct RGBImage: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// R, G, B bytes row by row; its count must stay width × height × 3.
    public var pixels: [UInt8]

    /// Wraps pixels; a count other than width × height × 3 is a programmer mistake.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0, "image size must not be negative (got \(width)×\(height))")
        precondition(
            pixels.count == width * height * 3,
            "\(width)×\(height) RGB needs \(width * height * 3) bytes, got \(pixels.count)"
        )
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The pixel at (x, y) as (r, g, b).
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "(\(x), \(y)) is outside \(width)×\(height)")
        let index = (y * width + x) * 3
        return (pixels[index], pixels[index + 1], pixels[index + 2])
    }

    /// Checks the invariant that `pixels` being a public var could break.
    func assertConsistent() {
        precondition(pixels.count == width * height * 3, "RGBImage pixels were resized to \(pixels.count) bytes for \(width)×\(height)")
    }
}
