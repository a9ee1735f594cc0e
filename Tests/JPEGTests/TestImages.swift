import Foundation
import JPEG
import TestSupport

/// Test inputs: the EXIF orientation photos of `Tests/Fixtures` and small synthetic images.
enum TestImages {
    /// The bytes of e.g. "Landscape_6.jpg".
    static func photo(_ name: String) throws -> [UInt8] {
        try Fixtures.orientationPhoto(name)
    }

    /// A smooth colour gradient with a few hard edges, width × height.
    static func gradient(width: Int, height: Int) -> RGBImage {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                pixels.append(UInt8(x * 255 / max(1, width - 1)))
                pixels.append(UInt8(y * 255 / max(1, height - 1)))
                pixels.append(x < width / 2 ? 40 : 200)
            }
        }
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    /// One colour everywhere.
    static func solid(width: Int, height: Int, _ r: UInt8, _ g: UInt8, _ b: UInt8) -> RGBImage {
        RGBImage(width: width, height: height, pixels: Array([[r, g, b]].joined().map { $0 }.repeated(width * height)))
    }

    /// Mean absolute difference per byte between two same-sized images.
    static func meanAbsoluteDifference(_ a: RGBImage, _ b: RGBImage) -> Double {
        precondition(a.width == b.width && a.height == b.height)
        var total = 0
        for i in a.pixels.indices { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
        return Double(total) / Double(max(1, a.pixels.count))
    }

    /// Offset of the first SOF0 segment's marker (FF C0) in a JPEG we encoded ourselves.
    static func sof0Offset(in jpeg: [UInt8]) -> Int? {
        var index = 2
        while index + 4 <= jpeg.count, jpeg[index] == 0xFF {
            let marker = jpeg[index + 1]
            if marker == 0xC0 { return index }
            index += 2 + (Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3]))
        }
        return nil
    }
}

extension Array {
    /// The array repeated `count` times.
    func repeated(_ count: Int) -> [Element] {
        Array(Swift.repeatElement(self, count: count).joined())
    }
}

