import Foundation
@testable import JPEG
import Testing

@Suite("Codec")
struct CodecTests {
    @Test("encode then decode gives back the image within JPEG error", arguments: [Subsampling.s444, .s422, .s420])
    func roundTrip(subsampling: Subsampling) throws {
        let image = TestImages.gradient(width: 96, height: 64)
        let jpeg = try JPEG.encode(image, quality: 95, subsampling: subsampling)
        #expect(JPEG.sniff(jpeg))
        let header = try JPEG.header(of: jpeg)
        #expect(header == JPEGHeader(
            width: 96, height: 64, colorSpace: .yCbCr,
            subsampling: [Subsampling.s444: "4:4:4", .s422: "4:2:2", .s420: "4:2:0"][subsampling]!,
            orientation: 1
        ))
        let decoded = try JPEG.decode(jpeg)
        #expect(decoded.width == 96 && decoded.height == 64)
        #expect(TestImages.meanAbsoluteDifference(decoded, image) < 3)
    }

    @Test("grey encoding writes a one-channel JPEG that decodes to equal R, G and B")
    func grayRoundTrip() throws {
        let jpeg = try JPEG.encode(TestImages.gradient(width: 32, height: 32), subsampling: .gray)
        let header = try JPEG.header(of: jpeg)
        #expect(header.colorSpace == .gray && header.subsampling == "4:0:0")
        let decoded = try JPEG.decode(jpeg)
        let (r, g, b) = decoded.pixel(x: 20, y: 10)
        #expect(r == g && g == b)
    }

    @Test("lower quality gives a smaller file")
    func qualityMatters() throws {
        let image = TestImages.gradient(width: 128, height: 128)
        #expect(try JPEG.encode(image, quality: 20).count < (try JPEG.encode(image, quality: 95)).count)
    }

    @Test("bytes that do not start with FF D8 FF are notJPEG for sniff, header and decode")
    func notJPEG() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        for bytes in [png, [], [0xFF, 0xD8], Array("hello".utf8)] {
            #expect(JPEG.sniff(bytes) == false)
            #expect(throws: JPEGError.self) { try JPEG.header(of: bytes) }
            let error = try #require(throws: JPEGError.self) { try JPEG.decode(bytes) }
            #expect(error.kind == .notJPEG)
        }
    }

    @Test("a header claiming 65000×65000 is refused as tooManyPixels before any pixel is allocated")
    func decompressionBomb() throws {
        var jpeg = try JPEG.encode(TestImages.gradient(width: 16, height: 16), quality: 80)
        let sof = try #require(TestImages.sof0Offset(in: jpeg))
        // SOF0: FF C0, length (2), precision (1), height (2), width (2).
        jpeg[sof + 5] = 0xFD; jpeg[sof + 6] = 0xE8
        jpeg[sof + 7] = 0xFD; jpeg[sof + 8] = 0xE8
        let expected = JPEGError.Kind.tooManyPixels(width: 65000, height: 65000, limit: 100_000_000)
        #expect(throws: JPEGError.self) { try JPEG.header(of: jpeg) }
        #expect((try? JPEG.header(of: jpeg, options: DecodeOptions(maxPixels: 5_000_000_000)))?.width == 65000)
        // 65000² × 3 bytes is 12.7 GB: reaching the allocation would crash this test.
        let error = try #require(throws: JPEGError.self) { try JPEG.decode(jpeg) }
        #expect(error.kind == expected)
        let small = try JPEG.encode(TestImages.gradient(width: 40, height: 30))
        let limited = try #require(throws: JPEGError.self) { try JPEG.decode(small, options: DecodeOptions(maxPixels: 1000)) }
        #expect(limited.kind == .tooManyPixels(width: 40, height: 30, limit: 1000))
    }

    @Test("an Adobe YCCK JPEG made by TurboJPEG decodes to the expected RGB colours")
    func cmykDecodesToRGB() throws {
        // Adobe convention: 255 means no ink. Four 8×8 blocks: cyan ink, magenta ink, yellow ink, 50% black.
        let blocks: [(cmyk: [UInt8], rgb: (Int, Int, Int))] = [
            ([0, 255, 255, 255], (0, 255, 255)),
            ([255, 0, 255, 255], (255, 0, 255)),
            ([255, 255, 0, 255], (255, 255, 0)),
            ([255, 255, 255, 128], (128, 128, 128)),
        ]
        let width = 32, height = 8
        var samples: [UInt8] = []
        for _ in 0..<height {
            for x in 0..<width { samples += blocks[x / 8].cmyk }
        }
        let jpeg = try JPEG.encodeCMYK(samples, width: width, height: height, quality: 100)
        #expect(JPEGSegment.hasAdobeMarker(in: jpeg))
        let header = try JPEG.header(of: jpeg)
        #expect(header.colorSpace == .ycck)
        let image = try JPEG.decode(jpeg)
        #expect(image.width == width && image.height == height)
        for (index, block) in blocks.enumerated() {
            let (r, g, b) = image.pixel(x: index * 8 + 4, y: 4)
            let expected = block.rgb
            #expect(abs(Int(r) - expected.0) <= 6 && abs(Int(g) - expected.1) <= 6 && abs(Int(b) - expected.2) <= 6,
                    "block \(index): got \((r, g, b)), expected \(expected)")
        }
    }

    @Test("CMYK without an Adobe marker is read as ink amounts, with it as inverted")
    func cmykInversionFollowsAdobeMarker() {
        let ink: [UInt8] = [255, 0, 0, 0]  // full cyan ink, stored plainly
        #expect(RGBImage(width: 1, height: 1, cmyk: ink, adobeInverted: false).pixels == [0, 255, 255])
        #expect(RGBImage(width: 1, height: 1, cmyk: ink, adobeInverted: true).pixels == [0, 0, 0])
    }
}
