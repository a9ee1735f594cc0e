import Foundation
@testable import JPEG
import Testing

/// What thumbnails carry: RGB from grey, CMYK and YCCK originals; the original's ICC profile,
/// byte for byte; no EXIF, GPS, XMP or other metadata.
@Suite("Thumbnailer colour and metadata")
struct ThumbnailerMetadataTests {
    static let sizes: [Thumbnailer.Target] = [.init(longestEdge: 32), .init(longestEdge: 64, fit: .fill), .init(longestEdge: 1024)]

    /// Real originals with metadata: EXIF, XMP and IPTC (pil_sample_*), GPS (exif_gps), ICC in
    /// one chunk (pil_sample_rgb) and seven (icc_profile_big, progressive), an Orientation tag.
    static let originals: [String] = [
        "pil_sample_rgb.jpg", "pil_sample_cmyk.jpg", "exif_gps.jpg", "icc_profile_big.jpg", "hopper_gray.jpg", "hopper.jpg",
    ]

    /// The bytes of `name`: a Pillow image, or a photo of the orientation set.
    static func original(_ name: String) throws -> [UInt8] {
        name.hasPrefix("Landscape") ? try TestImages.photo(name) : try TestImages.pillow(name)
    }

    @Test("no thumbnail carries EXIF (so no GPS, no Orientation), XMP, IPTC or a comment: only JFIF, the ICC profile and the image", arguments: originals + ["Landscape_6.jpg"])
    func noMetadata(name: String) throws {
        let source = try Self.original(name)
        #expect(TestImages.headerSegments(of: source).contains { [0xE1, 0xE2, 0xED, 0xFE].contains($0.marker) }, "\(name) has metadata")
        for output in try Thumbnailer().thumbnails(of: source, sizes: Self.sizes) {
            // The walker's whole pass: a well-formed JPEG to EOI.
            #expect(try JPEG.validate(output.data).end == output.data.count)
            let segments = TestImages.headerSegments(of: output.data)
            let markers = segments.map(\.marker)
            #expect(markers.first == 0xE0 && segments[0].payload.starts(with: Array("JFIF\0".utf8)), "\(name): \(markers)")
            // APP0 and APP2 only, and every APP2 an ICC chunk, right after the APP0.
            #expect(markers.allSatisfy { !(0xE0...0xEF).contains($0) || $0 == 0xE0 || $0 == 0xE2 } && !markers.contains(0xFE), "\(name): \(markers)")
            let icc = markers.indices.filter { markers[$0] == 0xE2 }
            #expect(icc == Array(1..<(1 + icc.count)), "\(name): \(markers)")
            #expect(icc.allSatisfy { segments[$0].payload.starts(with: Array("ICC_PROFILE\0".utf8)) })
            // A GPS IFD is EXIF's (no APP1, no GPS); these name the other kinds wherever they are.
            for signature in ["Exif", "http://ns.adobe.com", "Photoshop"] {
                #expect(output.data.firstRange(of: Array(signature.utf8)) == nil, "\(name): \(signature) in the output")
            }
            #expect(EXIF.orientation(in: output.data) == nil)
        }
    }

    @Test("the ICC profile is kept byte for byte, in one chunk or seven, numbered in order", arguments: ["pil_sample_rgb.jpg", "icc_profile_big.jpg"])
    func iccProfileKept(name: String) throws {
        let source = try TestImages.pillow(name)
        let profile = try #require(TestImages.iccProfile(of: source))
        #expect(profile.count == (name == "pil_sample_rgb.jpg" ? 3144 : 399_788))
        for output in try Thumbnailer().thumbnails(of: source, sizes: Self.sizes) {
            #expect(TestImages.iccProfile(of: output.data) == profile, "\(name) \(output.width)×\(output.height)")
            let chunks = TestImages.headerSegments(of: output.data).filter { $0.marker == 0xE2 }
            #expect(chunks.map { Int($0.payload[12]) } == Array(1...chunks.count))
            #expect(chunks.allSatisfy { Int($0.payload[13]) == chunks.count })
            #expect(chunks.count == (profile.count + ICCProfile.maxChunk - 1) / ICCProfile.maxChunk)
        }
    }

    @Test("a profile of other samples than the thumbnail's (CMYK) goes, as does one whose chunks do not make a profile")
    func mismatchedOrBrokenProfilesGo() throws {
        func withProfile(_ jpeg: [UInt8], _ colorSpace: String, chunks: [(UInt8, UInt8)] = [(1, 1)]) -> [UInt8] {
            var header = [UInt8](repeating: 0, count: 128)
            header.replaceSubrange(16..<20, with: Array(colorSpace.utf8))
            var segments: [UInt8] = []
            for (number, count) in chunks {
                segments += [0xFF, 0xE2, 0, UInt8(2 + 14 + header.count)] + Array("ICC_PROFILE\0".utf8)
                segments += [number, count] + header
            }
            return Array(jpeg[..<2]) + segments + Array(jpeg[2...])
        }
        let rgb = try JPEG.encode(TestImages.gradient(width: 64, height: 48), quality: 90)
        let cmyk = try JPEG.encodeCMYK([UInt8](repeating: 128, count: 64 * 48 * 4), width: 64, height: 48)
        let thumbnailer = Thumbnailer()
        func profile(_ jpeg: [UInt8]) throws -> [UInt8]? {
            TestImages.iccProfile(of: try thumbnailer.thumbnails(of: jpeg, sizes: [.init(longestEdge: 32)])[0].data)
        }
        #expect(try profile(withProfile(rgb, "RGB ")) != nil)
        #expect(try profile(withProfile(cmyk, "CMYK")) == nil)
        #expect(try profile(withProfile(rgb, "GRAY")) == nil)
        // Chunk 2 of 2 missing; chunk 1 twice.
        #expect(try profile(withProfile(rgb, "RGB ", chunks: [(1, 2)])) == nil)
        #expect(try profile(withProfile(rgb, "RGB ", chunks: [(1, 2), (1, 2)])) == nil)
    }

    @Test("a grey original makes a one-channel thumbnail: R = G = B, the luma of its colour sibling")
    func grey() throws {
        let outputs = try Thumbnailer().thumbnails(of: try TestImages.pillow("hopper_gray.jpg"), sizes: [.init(longestEdge: 64)])
        #expect(try JPEG.header(of: outputs[0].data).colorSpace == .gray)
        let grey = try JPEG.decode(outputs[0].data)
        #expect(grey.width == 64 && grey.height == 64)
        let pixels = grey.pixels
        let equal = stride(from: 0, to: pixels.count, by: 3).allSatisfy { (i: Int) -> Bool in pixels[i] == pixels[i + 1] && pixels[i] == pixels[i + 2] }
        #expect(equal)
        let colour = try JPEG.decode(try Thumbnailer().thumbnails(of: try TestImages.pillow("hopper.jpg"), sizes: [.init(longestEdge: 64)])[0].data)
        // Rec. 601 luma, as JPEG's Y and Pillow's convert("L").
        let luma = stride(from: 0, to: colour.pixels.count, by: 3).map { i -> UInt8 in
            let y = 0.299 * Double(colour.pixels[i]) + 0.587 * Double(colour.pixels[i + 1]) + 0.114 * Double(colour.pixels[i + 2])
            return UInt8(y.rounded())
        }
        let expected = RGBImage(width: 64, height: 64, pixels: luma.flatMap { [$0, $0, $0] })
        // Measured 1.0 per byte: each file's own compression, then ours.
        let difference = TestImages.meanAbsoluteDifference(grey, expected)
        #expect(difference < 3, "\(difference)")
    }

    @Test("an Adobe YCCK original comes out RGB: red top left, black bottom right, the picture of its RGB sibling")
    func ycck() throws {
        let source = try TestImages.pillow("pil_sample_cmyk.jpg")
        #expect(try JPEG.header(of: source).colorSpace == .ycck)
        let outputs = try Thumbnailer().thumbnails(of: source, sizes: [.init(longestEdge: 50)])
        #expect(try JPEG.header(of: outputs[0].data).colorSpace == .yCbCr)
        let image = try JPEG.decode(outputs[0].data)
        #expect(image.width == 50 && image.height == 50)
        let red = image.pixel(x: 1, y: 1), black = image.pixel(x: 48, y: 48)
        #expect(red.r > 200 && red.g < 60 && red.b < 60, "\(red)")
        #expect(black.r < 40 && black.g < 40 && black.b < 40, "\(black)")
        let sibling = try JPEG.decode(try Thumbnailer().thumbnails(of: try TestImages.pillow("pil_sample_rgb.jpg"), sizes: [.init(longestEdge: 50)])[0].data)
        // Measured 3.8 per byte: the sibling was converted with colour management, ours is the
        // naive formula.
        let difference = TestImages.meanAbsoluteDifference(image, sibling)
        #expect(difference < 8, "\(difference)")
    }

    @Test("CMYK inks made by TurboJPEG (Adobe-inverted YCCK) come out as their RGB colours")
    func cmykInks() throws {
        // 16×16 quadrants: cyan ink, magenta ink, yellow ink, 50% black (255 = no ink).
        let inks: [(cmyk: [UInt8], rgb: [Int])] = [
            ([0, 255, 255, 255], [0, 255, 255]), ([255, 0, 255, 255], [255, 0, 255]),
            ([255, 255, 0, 255], [255, 255, 0]), ([255, 255, 255, 128], [128, 128, 128]),
        ]
        var samples: [UInt8] = []
        for y in 0..<32 { for x in 0..<32 { samples += inks[(y / 16) * 2 + x / 16].cmyk } }
        let jpeg = try JPEG.encodeCMYK(samples, width: 32, height: 32, quality: 100)
        let image = try JPEG.decode(try Thumbnailer().thumbnails(of: jpeg, sizes: [.init(longestEdge: 16)])[0].data)
        for (index, ink) in inks.enumerated() {
            // The mean of the quadrant's centre 4×4 (a 16×16 4:2:0 thumbnail has one chroma block).
            var got = [0, 0, 0]
            for y in 0..<4 {
                for x in 0..<4 {
                    let pixel = image.pixel(x: (index % 2) * 8 + 2 + x, y: (index / 2) * 8 + 2 + y)
                    got = [got[0] + Int(pixel.r), got[1] + Int(pixel.g), got[2] + Int(pixel.b)]
                }
            }
            got = got.map { ($0 + 8) / 16 }
            #expect(zip(got, ink.rgb).allSatisfy { abs($0 - $1) <= 8 }, "ink \(index): \(got), expected \(ink.rgb)")
        }
    }
}
