import Foundation
@testable import JPEG
import Testing

/// PNG originals: every colour type and depth decoded to RGB with its transparency composited
/// on the background, their thumbnails JPEGs with the iCCP profile, and hostile files refused
/// from their header or their chunks, each with what was wrong.
@Suite("PNG")
struct PNGTests {
    static let blue = RGBColor(red: 0x33, green: 0x66, blue: 0xCC)

    /// `colour × α + background × (1 − α)`, rounded, as the decode composites.
    static func over(_ colour: UInt8, _ alpha: UInt8, _ background: UInt8) -> UInt8 {
        let a = Int(alpha)
        let sum: Int = Int(colour) * a + Int(background) * (255 - a) + 127
        return UInt8(sum / 255)
    }

    /// A column's alpha: transparent, half and opaque quarters of 128 columns.
    static func alpha(_ x: Int, _ y: Int) -> UInt8 { x < 32 ? 0 : x < 64 ? 128 : 255 }

    /// The PNGError `body` threw; nil when it threw none (or another error).
    func error(_ body: () throws -> Void) -> PNGError? { thrown(PNGError.self, by: body) }

    @Test("CRC-32 is ISO 3309's (the check value of \"123456789\")")
    func crc() {
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) } == 0xCBF4_3926)
    }

    @Test("an RGBA PNG's transparent, half and opaque pixels are composited on the background", arguments: [RGBColor.white, PNGTests.blue])
    func alphaComposited(background: RGBColor) throws {
        let hopper = try TestPNGs.hopper()
        let png = try TestPNGs.rgb(hopper, alpha: Self.alpha)
        let decoded = try PNG.decode(png, background: background)
        #expect(decoded.header.colorType == .rgba && decoded.header.hasTransparency)
        for (x, y) in [(5, 7), (40, 90), (100, 20)] {
            let source = hopper.pixel(x: x, y: y), out = decoded.image.pixel(x: x, y: y), a = Self.alpha(x, y)
            #expect(out.r == Self.over(source.r, a, background.red) && out.g == Self.over(source.g, a, background.green)
                && out.b == Self.over(source.b, a, background.blue), "(\(x), \(y)) α \(a): \(out)")
        }
        #expect(decoded.image.pixel(x: 0, y: 0) == (background.red, background.green, background.blue))
    }

    @Test("a 16-bit RGBA PNG decodes to its 8-bit values (within one), its alpha composited")
    func sixteenBit() throws {
        let hopper = try TestPNGs.hopper()
        let decoded = try PNG.decode(try TestPNGs.rgba16(hopper, alpha: Self.alpha), background: .white)
        #expect(decoded.header.bitDepth == 16)
        var worst = 0
        for y in stride(from: 0, to: 128, by: 3) {
            for x in 64..<128 {
                let a = hopper.pixel(x: x, y: y), b = decoded.image.pixel(x: x, y: y)
                worst = max(worst, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
            }
        }
        #expect(worst <= 1)
        #expect(decoded.image.pixel(x: 3, y: 3) == (255, 255, 255))
    }

    @Test("palette PNGs (8 and 4 bits, interlaced too) expand their entries and tRNS alpha", arguments: [(8, false), (4, false), (2, true)])
    func palette(depth: Int, interlaced: Bool) throws {
        let entries: [(red: UInt8, green: UInt8, blue: UInt8)] = [(255, 0, 0), (0, 200, 0), (10, 20, 250)]
        let png = try TestPNGs.palette(
            width: 40, height: 30, bitDepth: depth, palette: entries, alpha: [0, 128], interlaced: interlaced
        ) { x, _ in x < 10 ? 0 : x < 20 ? 1 : 2 }
        let decoded = try PNG.decode(png, background: Self.blue)
        #expect(decoded.header.colorType == .palette && decoded.header.hasTransparency && decoded.header.interlaced == interlaced)
        #expect(decoded.image.pixel(x: 5, y: 29) == (0x33, 0x66, 0xCC))
        #expect(decoded.image.pixel(x: 15, y: 3) == (Self.over(0, 128, 0x33), Self.over(200, 128, 0x66), Self.over(0, 128, 0xCC)))
        #expect(decoded.image.pixel(x: 39, y: 0) == (10, 20, 250))
    }

    @Test("grey PNGs: 1 and 16 bits, a tRNS key, and grey with alpha")
    func gray() throws {
        let keyed = try PNG.decode(try TestPNGs.gray(width: 16, height: 4, key: 0) { x, _ in UInt16(x * 16) }, background: Self.blue)
        #expect(keyed.header.hasTransparency && keyed.header.isGray)
        #expect(keyed.image.pixel(x: 0, y: 0) == (0x33, 0x66, 0xCC))
        #expect(keyed.image.pixel(x: 8, y: 2) == (128, 128, 128))
        let bits = try PNG.decode(try TestPNGs.gray(width: 9, height: 3, bitDepth: 1) { x, _ in UInt16(x % 2) })
        #expect(bits.image.pixel(x: 0, y: 1) == (0, 0, 0) && bits.image.pixel(x: 1, y: 1) == (255, 255, 255))
        let deep = try PNG.decode(try TestPNGs.gray(width: 4, height: 4, bitDepth: 16) { _, _ in 0xC080 })
        #expect(abs(Int(deep.image.pixel(x: 1, y: 1).r) - 0xC0) <= 1)
        let withAlpha = try PNG.decode(try TestPNGs.gray(width: 4, height: 4, alpha: { x, _ in x == 0 ? 0 : 255 }) { _, _ in 60 })
        #expect(withAlpha.image.pixel(x: 0, y: 0) == (255, 255, 255) && withAlpha.image.pixel(x: 3, y: 0) == (60, 60, 60))
    }

    @Test("an interlaced PNG decodes to the same pixels as the plain one")
    func interlaced() throws {
        let hopper = try TestPNGs.hopper()
        let plain = try PNG.decode(try TestPNGs.rgb(hopper)), adam7 = try PNG.decode(try TestPNGs.rgb(hopper, interlaced: true))
        #expect(adam7.header.interlaced && !plain.header.interlaced)
        #expect(adam7.image == plain.image && plain.image == hopper)
    }

    @Test("thumbnails of a PNG are whole JPEGs of the sizes asked, with its RGB iCCP profile and nothing else")
    func thumbnailsKeepTheProfile() throws {
        let profile = try #require(TestImages.iccProfile(of: try TestImages.pillow("pil_sample_rgb.jpg")))
        let png = try TestPNGs.rgb(try TestPNGs.hopper(), icc: profile, alpha: Self.alpha)
        let outputs = try Thumbnailer(background: Self.blue).thumbnails(ofPNG: png, sizes: [.init(longestEdge: 64), .init(width: 32, height: 16, fit: .fill)])
        #expect(outputs.map { [$0.width, $0.height] } == [[64, 64], [32, 16]])
        for output in outputs {
            #expect(try JPEG.validate(output.data).end == output.data.count)
            #expect(TestImages.iccProfile(of: output.data) == profile)
            #expect(TestImages.headerSegments(of: output.data).allSatisfy { $0.marker == 0xE0 || $0.marker == 0xE2 || $0.marker >= 0xC0 && $0.marker < 0xE0 })
        }
        // The transparent left quarter is the background, within JPEG's error.
        let small = try JPEG.decode(outputs[0].data)
        let corner = small.pixel(x: 2, y: 30)
        #expect(abs(Int(corner.r) - 0x33) <= 6 && abs(Int(corner.g) - 0x66) <= 6 && abs(Int(corner.b) - 0xCC) <= 6, "\(corner)")
    }

    @Test("a grey PNG on a grey background makes grey JPEGs; on a colour one, colour JPEGs")
    func grayOutputs() throws {
        let png = try TestPNGs.gray(width: 64, height: 64, alpha: { x, _ in x < 32 ? 0 : 255 }) { x, y in UInt16((x + y) % 256) }
        let onWhite = try Thumbnailer().thumbnails(ofPNG: png, sizes: [.init(longestEdge: 32)])[0]
        #expect(try JPEG.header(of: onWhite.data).colorSpace == .gray)
        let onBlue = try Thumbnailer(background: Self.blue).thumbnails(ofPNG: png, sizes: [.init(longestEdge: 32)])[0]
        #expect(try JPEG.header(of: onBlue.data).colorSpace != .gray)
    }

    @Test("what a PNG's thumbnails hold is its RGB pixels (RGBA when interlaced with alpha) and the largest size's encode")
    func workingBytes() throws {
        let hopper = try TestPNGs.hopper(), sizes: [Thumbnailer.Target] = [.init(longestEdge: 64), .init(longestEdge: 32)]
        #expect(try Thumbnailer().workingBytes(ofPNG: try TestPNGs.rgb(hopper), sizes: sizes) == 128 * 128 * 3 + 64 * 64 * 11)
        #expect(try Thumbnailer().workingBytes(ofPNG: try TestPNGs.rgb(hopper, alpha: Self.alpha), sizes: sizes) == 128 * 128 * 3 + 64 * 64 * 11)
        let interlaced = try TestPNGs.rgb(hopper, interlaced: true, alpha: Self.alpha)
        #expect(try Thumbnailer().workingBytes(ofPNG: interlaced, sizes: sizes) == 128 * 128 * 4 + 64 * 64 * 11)
    }

    @Test("the three decodes agree: straight to RGB, RGBA row by row composited, and RGBA whole (interlaced) composited")
    func decodePathsAgree() throws {
        let hopper = try TestPNGs.hopper()
        // Straight to RGB: no transparency. The same pixels as the picture, every row.
        #expect(try PNG.decode(try TestPNGs.rgb(hopper)).image == hopper)
        // With alpha: row by row (plain) and whole (Adam7) make the same composite, the last
        // row and the first included; opaque everywhere, it is the picture itself.
        for background in [RGBColor.white, Self.blue] {
            let rows = try PNG.decode(try TestPNGs.rgb(hopper, alpha: Self.alpha), background: background)
            let whole = try PNG.decode(try TestPNGs.rgb(hopper, interlaced: true, alpha: Self.alpha), background: background)
            #expect(!rows.header.interlaced && whole.header.interlaced)
            #expect(rows.image == whole.image)
            #expect(rows.image.pixel(x: 100, y: 127) == hopper.pixel(x: 100, y: 127))
            #expect(rows.image.pixel(x: 0, y: 127) == (background.red, background.green, background.blue))
        }
        let opaque = try PNG.decode(try TestPNGs.rgb(hopper, alpha: { _, _ in 255 }), background: Self.blue)
        #expect(opaque.image == hopper)
        // 16 bits: straight to RGB (no alpha) and through RGBA rows (opaque alpha) reduce alike.
        let rgba16 = try PNG.decode(try TestPNGs.rgba16(hopper) { _, _ in 255 })
        let samples = (0..<128).flatMap { y in
            (0..<128).flatMap { x in
                let p = hopper.pixel(x: x, y: y)
                return [p.r, p.g, p.b].flatMap { [$0, $0 ^ 0x5A] }
            }
        }
        let rgb16 = try PNG.decode(try PNG.encode(PNGPicture(width: 128, height: 128, bitDepth: 16, colorType: .rgb, samples: samples)))
        #expect(!rgb16.header.hasTransparency && rgb16.header.bitDepth == 16)
        #expect(rgb16.image == rgba16.image)
    }

    @Test("a PNG with alpha whose image data stops partway is refused, not returned with rows missing")
    func rowsCutShort() throws {
        let png = try TestPNGs.rgb(try TestPNGs.hopper(), alpha: Self.alpha)
        let idat = try #require(TestPNGs.offset(of: "IDAT", in: png))
        let length = Int(png[idat]) << 24 | Int(png[idat + 1]) << 16 | Int(png[idat + 2]) << 8 | Int(png[idat + 3])
        // Half the compressed stream, in a chunk whose length and CRC are right: it inflates
        // to about half the rows and then ends.
        let half = Array(png[(idat + 8)..<(idat + 8 + length / 2)])
        let short = Array(png[..<idat]) + TestPNGs.chunk("IDAT", half) + Array(png[(idat + 12 + length)...])
        let refused = error { _ = try PNG.decode(short) }
        #expect(refused?.kind == .truncated || refused?.kind == .corrupt)
        #expect(refused?.message.contains("libspng") == true, "\(refused?.message ?? "no error")")
    }

    @Test("a header claiming 100,000 × 100,000 is refused for its pixels, before anything is inflated")
    func claimingHugePixels() {
        let refused = error { _ = try PNG.header(of: TestPNGs.claiming(width: 100_000, height: 100_000)) }
        #expect(refused?.kind == .tooManyPixels(width: 100_000, height: 100_000, limit: 100_000_000))
    }

    @Test("a small file whose header is under the pixel limit but decodes past the byte limit is refused from its header")
    func decompressionBomb() throws {
        // 6000 × 6000 grey, every byte 0: 36 MB of scanlines in a file of a few tens of KB,
        // which decodes to 144 MB of RGBA.
        let bomb = try TestPNGs.gray(width: 6000, height: 6000) { _, _ in 0 }
        #expect(bomb.count < 100_000)
        let options = DecodeOptions(maxDecodedBytes: 64 << 20)
        let refused = error { _ = try PNG.decode(bomb, options: options) }
        #expect(refused?.kind == .tooManyBytes(width: 6000, height: 6000, bytes: 144_000_000, limit: 64 << 20))
        let validated = error { _ = try PNG.validate(bomb, options: options) }
        #expect(validated?.kind == refused?.kind)
        // Under the default limit it is a (dull) picture like any other.
        #expect(try PNG.validate(bomb).width == 6000)
    }

    @Test("image data too short to inflate to the scanlines its header declares is refused as truncated, unread")
    func cannotInflateThatFar() {
        let refused = error { _ = try PNG.header(of: TestPNGs.claiming(width: 4000, height: 4000)) }
        #expect(refused?.kind == .truncated)
        #expect(refused?.message == "its 8 bytes of image data inflate to at most 8256 bytes, short of the 48004000 bytes of scanlines its 4000×4000 header declares")
    }

    @Test("a file cut short is refused as truncated, naming where")
    func truncated() throws {
        let png = try TestPNGs.rgb(try TestPNGs.hopper())
        let idat = try #require(TestPNGs.offset(of: "IDAT", in: png))
        let cut = Array(png.prefix(idat + 100))
        let inChunk = error { _ = try PNG.validate(cut) }
        #expect(inChunk?.kind == .truncated)
        #expect(inChunk?.message.hasPrefix("chunk IDAT at offset \(idat) declares") == true)
        let noEnd = error { _ = try PNG.validate(Array(png.dropLast(12))) }
        #expect(noEnd?.kind == .truncated && noEnd?.message == "the file ends at byte \(png.count - 12), before its IEND chunk")
    }

    @Test("a bad CRC is refused by the walk, and by libspng's own check when decoding")
    func badCRC() throws {
        let png = try TestPNGs.rgb(try TestPNGs.hopper())
        let idat = try #require(TestPNGs.offset(of: "IDAT", in: png))
        var damaged = png
        damaged[idat + 20] ^= 0x01
        let walked = error { _ = try PNG.validate(damaged) }
        #expect(walked?.kind == .badChecksum)
        #expect(walked?.message.hasPrefix("chunk IDAT at offset \(idat) has CRC 0x") == true)
        // The IHDR's own CRC (bytes 29...32): the decode, which leaves CRCs to libspng, refuses it too.
        var header = png
        header[32] ^= 0x01
        let walkedHeader = error { _ = try PNG.validate(header) }
        #expect(walkedHeader?.message.hasPrefix("chunk IHDR at offset 8 has CRC 0x") == true)
        let decoded = error { _ = try PNG.decode(header) }
        #expect(decoded?.kind == .badChecksum && decoded?.message.contains("libspng error") == true)
    }

    @Test("image data that does not inflate (its CRC right) is refused as damaged, in libspng's words")
    func brokenStream() throws {
        let png = try TestPNGs.rgb(try TestPNGs.hopper())
        let idat = try #require(TestPNGs.offset(of: "IDAT", in: png))
        let length = Int(png[idat]) << 24 | Int(png[idat + 1]) << 16 | Int(png[idat + 2]) << 8 | Int(png[idat + 3])
        var data = Array(png[(idat + 8)..<(idat + 8 + length)])
        for i in 2..<min(40, data.count) { data[i] = 0xFF }
        let broken = Array(png[..<idat]) + TestPNGs.chunk("IDAT", data) + Array(png[(idat + 12 + length)...])
        let refused = error { _ = try PNG.validate(broken) }
        #expect(refused?.kind == .corrupt || refused?.kind == .truncated)
        #expect(refused?.message.contains("libspng error") == true)
    }

    @Test("not a PNG, a first chunk that is not IHDR, a bad IHDR: each refused with what is wrong")
    func malformed() {
        let gif = error { _ = try PNG.validate(Array("GIF89a".utf8) + [UInt8](repeating: 0, count: 40)) }
        #expect(gif?.kind == .notPNG)
        let noHeader = PNG.signature + TestPNGs.chunk("IDAT", [0]) + TestPNGs.chunk("IEND", [])
        let headless = error { _ = try PNG.validate(noHeader) }
        #expect(headless?.message == "its first chunk is IDAT, not IHDR")
        let badDepth = PNG.signature + TestPNGs.chunk("IHDR", TestPNGs.bigEndian(4) + TestPNGs.bigEndian(4) + [16, 3, 0, 0, 0])
            + TestPNGs.chunk("IEND", [])
        let depth = error { _ = try PNG.validate(badDepth) }
        #expect(depth?.message == "its IHDR is invalid: bit depth 16 is not allowed for colour type 3 (allowed: [1, 2, 4, 8])")
    }
}
