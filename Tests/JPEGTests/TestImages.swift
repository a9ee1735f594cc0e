import Foundation
@testable import JPEG
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

    /// The bytes of a Pillow test image of Tests/Fixtures/pillow, e.g. "hopper_gray.jpg".
    static func pillow(_ name: String) throws -> [UInt8] {
        try Fixtures.pillowImage(name)
    }

    /// The photo with the value of its EXIF Orientation tag (IFD0, II or MM) replaced by
    /// `value`; nil when it has none.
    static func settingOrientation(of jpeg: [UInt8], to value: UInt16) -> [UInt8]? {
        var exif: Range<Int>?
        jpeg.withUnsafeBytes { buffer in
            JPEGSegment.headerSegments(of: buffer) { if exif == nil, JPEGSegment.isExif($0, in: buffer) { exif = $0.payload } }
        }
        guard let tiff = exif.map({ $0.lowerBound + 6 }) else { return nil }
        let little = jpeg[tiff] == 0x49
        func read(_ at: Int, _ count: Int) -> Int {
            (0..<count).reduce(0) { $0 << 8 | Int(jpeg[at + (little ? count - 1 - $1 : $1)]) }
        }
        let ifd = tiff + read(tiff + 4, 4)
        for entry in 0..<read(ifd, 2) where read(ifd + 2 + 12 * entry, 2) == 0x0112 {
            var patched = jpeg
            let at = ifd + 2 + 12 * entry + 8
            patched[at] = UInt8(little ? value & 0xFF : value >> 8)
            patched[at + 1] = UInt8(little ? value >> 8 : value & 0xFF)
            return patched
        }
        return nil
    }

    /// The marker segments before the first SOS, in order: marker and payload.
    static func headerSegments(of jpeg: [UInt8]) -> [(marker: UInt8, payload: [UInt8])] {
        jpeg.withUnsafeBytes { buffer in
            var segments: [(marker: UInt8, payload: [UInt8])] = []
            JPEGSegment.headerSegments(of: buffer) { segments.append(($0.marker, Array(buffer[$0.payload]))) }
            return segments
        }
    }

    /// The ICC profile of a JPEG, its APP2 "ICC_PROFILE" chunks joined by their numbers (read
    /// here, not by `ICCProfile`); nil when it has none.
    static func iccProfile(of jpeg: [UInt8]) -> [UInt8]? {
        let chunks = headerSegments(of: jpeg).filter { $0.marker == 0xE2 && $0.payload.starts(with: Array("ICC_PROFILE\0".utf8)) }
        guard !chunks.isEmpty else { return nil }
        return chunks.sorted { $0.payload[12] < $1.payload[12] }.flatMap { $0.payload.dropFirst(14) }
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


/// The error of type `E` that `body` threw; nil when it threw none (or one of another type).
func thrown<E: Error>(_ type: E.Type, by body: () throws -> Void) -> E? {
    do {
        try body()
        return nil
    } catch {
        return error as? E
    }
}
