@testable import JPEG

/// PNGs made at test time with libspng (`PNG.encode`) from the repository's JPEGs or from
/// synthetic pixels, in every colour type and depth, and hostile ones made by hand.
enum TestPNGs {
    /// RGB (or RGBA when `alpha` is given) at 8 bits, from `image`.
    static func rgb(_ image: RGBImage, interlaced: Bool = false, icc: [UInt8]? = nil, alpha: ((Int, Int) -> UInt8)? = nil) throws -> [UInt8] {
        var samples: [UInt8] = []
        samples.reserveCapacity(image.width * image.height * 4)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let p = image.pixel(x: x, y: y)
                samples += [p.r, p.g, p.b]
                if let alpha { samples.append(alpha(x, y)) }
            }
        }
        return try PNG.encode(
            PNGPicture(
                width: image.width, height: image.height, bitDepth: 8, colorType: alpha == nil ? .rgb : .rgba,
                interlaced: interlaced, samples: samples, iccProfile: icc))
    }

    /// RGBA at 16 bits: each 8-bit value v of `image` as the 16-bit sample v·256 + (v ^ 0x5A),
    /// big-endian, so a reduction to 8 bits that keeps the high byte gives v back (one that
    /// rounds, v or v + 1); alpha likewise from `alpha`.
    static func rgba16(_ image: RGBImage, alpha: (Int, Int) -> UInt8) throws -> [UInt8] {
        var samples: [UInt8] = []
        samples.reserveCapacity(image.width * image.height * 8)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let p = image.pixel(x: x, y: y)
                for v in [p.r, p.g, p.b, alpha(x, y)] { samples += [v, v ^ 0x5A] }
            }
        }
        return try PNG.encode(PNGPicture(width: image.width, height: image.height, bitDepth: 16, colorType: .rgba, samples: samples))
    }

    /// A palette PNG at `bitDepth` (1, 2, 4 or 8): pixel (x, y) is entry `index(x, y)` of
    /// `palette`; `alpha` the tRNS of its first entries.
    static func palette(
        width: Int, height: Int, bitDepth: Int = 8, palette: [(red: UInt8, green: UInt8, blue: UInt8)], alpha: [UInt8] = [],
        interlaced: Bool = false, index: (Int, Int) -> Int
    ) throws -> [UInt8] {
        let samples = packed(width: width, height: height, bitDepth: bitDepth) { UInt8(index($0, $1)) }
        return try PNG.encode(
            PNGPicture(
                width: width, height: height, bitDepth: bitDepth, colorType: .palette, interlaced: interlaced, samples: samples,
                palette: palette, paletteAlpha: alpha))
    }

    /// A grey PNG at `bitDepth` (1, 2, 4, 8 or 16), with a tRNS key when given; grey+alpha
    /// (8 bits) when `alpha` is given.
    static func gray(
        width: Int, height: Int, bitDepth: Int = 8, key: UInt16? = nil, alpha: ((Int, Int) -> UInt8)? = nil, value: (Int, Int) -> UInt16
    ) throws -> [UInt8] {
        let samples: [UInt8]
        if let alpha {
            samples = (0..<height).flatMap { y in (0..<width).flatMap { x in [UInt8(value(x, y)), alpha(x, y)] } }
        } else if bitDepth == 16 {
            samples = (0..<height).flatMap { y in (0..<width).flatMap { x in [UInt8(value(x, y) >> 8), UInt8(value(x, y) & 0xFF)] } }
        } else {
            samples = packed(width: width, height: height, bitDepth: bitDepth) { UInt8(value($0, $1)) }
        }
        return try PNG.encode(
            PNGPicture(
                width: width, height: height, bitDepth: alpha == nil ? bitDepth : 8, colorType: alpha == nil ? .gray : .grayAlpha,
                samples: samples, transparentKey: key.map { (red: $0, green: 0, blue: 0) }))
    }

    /// Rows of `bitDepth`-bit samples packed from the most significant bits, each row whole bytes.
    static func packed(width: Int, height: Int, bitDepth: Int, _ sample: (Int, Int) -> UInt8) -> [UInt8] {
        let rowBytes = (width * bitDepth + 7) / 8
        var bytes = [UInt8](repeating: 0, count: rowBytes * height)
        for y in 0..<height {
            for x in 0..<width {
                let bit = x * bitDepth
                bytes[y * rowBytes + bit / 8] |= sample(x, y) << (8 - bitDepth - bit % 8)
            }
        }
        return bytes
    }

    /// A chunk: length, type, data, CRC.
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        let crc = body.withUnsafeBytes { CRC32.checksum($0) }
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }

    /// A PNG whose IHDR says `width` × `height` (RGB, 8 bits) and whose image data is the
    /// given bytes: what a file claiming a picture it does not hold looks like.
    static func claiming(width: Int, height: Int, colorType: UInt8 = 2, imageData: [UInt8] = [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) -> [UInt8] {
        PNG.signature + chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, colorType, 0, 0, 0])
            + chunk("IDAT", imageData) + chunk("IEND", [])
    }

    /// The offset of the first chunk of `type` in `png`.
    static func offset(of type: String, in png: [UInt8]) -> Int? {
        var at = 8
        while at + 8 <= png.count {
            let length = Int(png[at]) << 24 | Int(png[at + 1]) << 16 | Int(png[at + 2]) << 8 | Int(png[at + 3])
            if String(decoding: png[(at + 4)..<(at + 8)], as: UTF8.self) == type { return at }
            at += 12 + length
        }
        return nil
    }

    /// The photo of the repository's fixtures every PNG test starts from: Pillow's hopper
    /// (a 128×128 JPEG), decoded.
    static func hopper() throws -> RGBImage {
        try JPEG.decode(TestImages.pillow("hopper.jpg"))
    }
}
