@testable import JPEG
import Testing

/// What the photo-edit tests build their inputs and measure their outputs with.
enum PhotoEditImages {
    /// The six block colours of `blocks`, left to right, top to bottom.
    static let blockColours: [PhotoEdit.Color] = [
        .init(r: 220, g: 40, b: 40), .init(r: 40, g: 200, b: 60), .init(r: 40, g: 60, b: 220),
        .init(r: 230, g: 210, b: 40), .init(r: 200, g: 50, b: 200), .init(r: 40, g: 200, b: 210),
    ]

    /// 96×64: 3 × 2 blocks of 32×32, each one of `blockColours`.
    static let blocks: RGBImage = {
        var pixels: [UInt8] = []
        for y in 0..<64 {
            for x in 0..<96 {
                let colour = blockColours[(y / 32) * 3 + x / 32]
                pixels += [colour.r, colour.g, colour.b]
            }
        }
        return RGBImage(width: 96, height: 64, pixels: pixels)
    }()

    /// `blocks` at quality 100, 4:4:4: the colours come back within a few levels.
    static func blocksJPEG() throws -> [UInt8] {
        try JPEG.encode(blocks, quality: 100, subsampling: .s444)
    }

    /// A gradient under a pseudo-random texture of ±48 in every channel alike (so in the luma,
    /// which 4:2:0 keeps at full resolution): a crop a single pixel off differs everywhere.
    static func textured(width: Int, height: Int) -> RGBImage {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                var hash = UInt32(truncatingIfNeeded: x &* 73_856_093 ^ y &* 19_349_663)
                hash = (hash ^ (hash >> 13)) &* 0x5BD1_E995
                let noise = Int(hash >> 24) * 96 / 256 - 48
                pixels.append(UInt8(clamping: x * 160 / max(1, width - 1) + 48 + noise))
                pixels.append(UInt8(clamping: y * 160 / max(1, height - 1) + 48 + noise))
                pixels.append(UInt8(clamping: 128 + noise))
            }
        }
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    /// Rec. 601 luma, as JPEG's Y: what 4:2:0 keeps sharp.
    static func luma(_ pixel: (r: UInt8, g: UInt8, b: UInt8)) -> Double {
        0.299 * Double(pixel.r) + 0.587 * Double(pixel.g) + 0.114 * Double(pixel.b)
    }

    /// `luma` of a colour.
    static func luma(_ colour: PhotoEdit.Color) -> Double { luma((colour.r, colour.g, colour.b)) }

    /// What the editor's re-encode of `image` decodes to: quality 90, 4:2:0.
    static func reencoded(_ image: RGBImage, quality: Int = PhotoEdit.defaultQuality) throws -> RGBImage {
        try JPEG.decode(try JPEG.encode(image, quality: quality, subsampling: .s420))
    }

    /// An APP1 Exif segment holding only IFD0's Orientation tag, big-endian.
    static func exifSegment(orientation: UInt8) -> [UInt8] {
        let payload: [UInt8] = Array("Exif\0\0".utf8) + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]
            + [0, 1] + [0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0] + [0, 0, 0, 0]
        return [0xFF, 0xE1, 0, UInt8(payload.count + 2)] + payload
    }

    /// `jpeg` (one TurboJPEG wrote: SOI, then the JFIF APP0) with an EXIF orientation.
    static func withOrientation(_ jpeg: [UInt8], _ orientation: UInt8) -> [UInt8] {
        let app0End = 4 + (Int(jpeg[4]) << 8 | Int(jpeg[5]))
        return Array(jpeg[..<app0End]) + exifSegment(orientation: orientation) + Array(jpeg[app0End...])
    }

    /// The mean colour of the pixels of `image` in `rect`.
    static func mean(_ image: RGBImage, _ rect: PhotoEdit.Rect) -> (r: Double, g: Double, b: Double) {
        var sum = (0, 0, 0)
        for y in rect.y..<(rect.y + rect.height) {
            for x in rect.x..<(rect.x + rect.width) {
                let p = image.pixel(x: x, y: y)
                sum = (sum.0 + Int(p.r), sum.1 + Int(p.g), sum.2 + Int(p.b))
            }
        }
        let count = Double(rect.width * rect.height)
        return (Double(sum.0) / count, Double(sum.1) / count, Double(sum.2) / count)
    }

    /// Whether each channel of `colour` is within `tolerance` of `expected`.
    static func near(_ colour: (r: Double, g: Double, b: Double), _ expected: PhotoEdit.Color, _ tolerance: Double) -> Bool {
        abs(colour.r - Double(expected.r)) <= tolerance && abs(colour.g - Double(expected.g)) <= tolerance
            && abs(colour.b - Double(expected.b)) <= tolerance
    }

    /// `near` for one pixel.
    static func near(_ pixel: (r: UInt8, g: UInt8, b: UInt8), _ expected: PhotoEdit.Color, _ tolerance: Int) -> Bool {
        abs(Int(pixel.r) - Int(expected.r)) <= tolerance && abs(Int(pixel.g) - Int(expected.g)) <= tolerance
            && abs(Int(pixel.b) - Int(expected.b)) <= tolerance
    }

    /// The largest difference of any byte between two same-sized images.
    static func maxDifference(_ a: RGBImage, _ b: RGBImage) -> Int {
        precondition(a.width == b.width && a.height == b.height)
        return zip(a.pixels, b.pixels).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }

    /// The image without a border of `inset` pixels.
    static func inner(_ image: RGBImage, inset: Int = 1) -> RGBImage {
        image.cropped(x: inset, y: inset, width: image.width - 2 * inset, height: image.height - 2 * inset)
    }

    /// The refusal of the edit; nil when it succeeds.
    static func refusal(_ jpeg: [UInt8], _ edit: PhotoEdit, options: DecodeOptions = .init()) -> PhotoEditError? {
        do {
            _ = try PhotoEditor(options: options).edit(jpeg, edit)
            return nil
        } catch {
            return error
        }
    }

    /// The edit's output, decoded.
    static func edited(_ jpeg: [UInt8], _ edit: PhotoEdit) throws -> (EditedPhoto, RGBImage) {
        let output = try PhotoEditor().edit(jpeg, edit)
        let image = try JPEG.decode(output.data)
        #expect(image.width == output.width && image.height == output.height)
        return (output, image)
    }

    /// The JPEG's pixels, upright.
    static func upright(_ jpeg: [UInt8]) throws -> RGBImage {
        try JPEG.decode(jpeg).oriented(try JPEG.header(of: jpeg).orientation)
    }
}
