import Foundation
@testable import JPEG
import Testing

/// The thumbnailer's pictures: upright for every EXIF orientation, the sizes asked for (never
/// enlarged), and several sizes from one decode.
@Suite("Thumbnailer")
struct ThumbnailerTests {
    /// Measured at a longest edge of 256: every correctly oriented thumbnail is within 1.92 per
    /// byte of its `_1` sibling's (0.26 to 1.92; the siblings were saved from one picture, so
    /// what differs is their own compression, then ours). With the orientation ignored (the
    /// thumbnailer run once so) 2...4 differ by 39 to 85 and 5...8 come out the wrong way
    /// round; `ignoringTheTagIsCaught` keeps that check. 5 leaves room for JPEG noise and is
    /// far from a wrong turn.
    static let uprightThreshold = 5.0
    static let wrongThreshold = 30.0

    static let photos: [(kind: String, orientation: Int)] = ["Landscape", "Portrait"].flatMap { kind in (0...8).map { (kind, $0) } }

    /// The 256 FIT thumbnail of a photo of Tests/Fixtures/exif-orientation, decoded.
    static func thumbnail(_ data: [UInt8], _ target: Thumbnailer.Target = .init(longestEdge: 256)) throws -> (Thumbnailer.Output, RGBImage) {
        let output = try #require(try Thumbnailer().thumbnails(of: data, sizes: [target]).first)
        return (output, try JPEG.decode(output.data))
    }

    @Test("every photo of the orientation set comes out upright, like the thumbnail of its _1 sibling", arguments: photos)
    func upright(kind: String, orientation: Int) throws {
        let (_, reference) = try Self.thumbnail(try TestImages.photo("\(kind)_1.jpg"))
        let (output, image) = try Self.thumbnail(try TestImages.photo("\(kind)_\(orientation).jpg"))
        let expected = kind == "Landscape" ? (256, 171) : (171, 256)
        #expect(output.width == expected.0 && output.height == expected.1)
        try #require(image.width == expected.0 && image.height == expected.1, "\(kind)_\(orientation): \(image.width)×\(image.height)")
        let difference = TestImages.meanAbsoluteDifference(image, reference)
        #expect(difference < Self.uprightThreshold, "\(kind)_\(orientation): \(difference)")
    }

    @Test("the comparison fails a thumbnail that ignores the orientation: each photo with its tag set to 1", arguments: 2...8)
    func ignoringTheTagIsCaught(orientation: Int) throws {
        let (_, reference) = try Self.thumbnail(try TestImages.photo("Landscape_1.jpg"))
        let untagged = try #require(TestImages.settingOrientation(of: try TestImages.photo("Landscape_\(orientation).jpg"), to: 1))
        let (_, image) = try Self.thumbnail(untagged)
        // 5...8 store the picture transposed: ignored, it comes out portrait, not comparable at all.
        if orientation >= 5 {
            #expect(image.width < image.height)
        } else {
            let difference = TestImages.meanAbsoluteDifference(image, reference)
            #expect(difference > Self.wrongThreshold, "\(orientation): \(difference)")
        }
    }

    /// Stored sizes (odd ones, both aspects, tiny) and boxes, FIT and FILL.
    static let sources: [(width: Int, height: Int)] = [(1001, 333), (333, 1001), (640, 480), (97, 13), (50, 50)]
    static let boxes: [(width: Int, height: Int)] = [(16, 16), (64, 64), (256, 256), (1024, 1024), (300, 100), (40, 120)]

    @Test("FIT is inside the box with the picture's aspect, FILL covers it with the box's, neither is ever enlarged")
    func sizes() throws {
        for source in Self.sources {
            let jpeg = try JPEG.encode(TestImages.gradient(width: source.width, height: source.height), quality: 90)
            let targets = Self.boxes.flatMap { box in
                [RenditionFit.fit, .fill].map { Thumbnailer.Target(width: box.width, height: box.height, fit: $0) }
            }
            for output in try Thumbnailer().thumbnails(of: jpeg, sizes: targets) {
                let box = output.target, label = "\(source) in \(box.width)×\(box.height) \(box.fit)"
                let header = try JPEG.header(of: output.data)
                #expect(header.width == output.width && header.height == output.height, "\(label)")
                #expect(output.width <= source.width && output.height <= source.height, "\(label): enlarged")
                #expect(output.width <= box.width && output.height <= box.height, "\(label): outside the box")
                switch box.fit {
                case .fit:
                    // One edge meets the box, or the picture is whole at its own size.
                    let whole = output.width == source.width && output.height == source.height
                    #expect(whole || output.width == box.width || output.height == box.height, "\(label): \(output.width)×\(output.height)")
                    #expect(Self.aspectWithinAPixel(output, source.width, source.height), "\(label): \(output.width)×\(output.height)")
                case .fill:
                    let covered = source.width >= box.width && source.height >= box.height
                    if covered { #expect(output.width == box.width && output.height == box.height, "\(label)") }
                    // Smaller than the box: the box shrunk to what the picture covers, one edge the picture's.
                    #expect(covered || output.width == source.width || output.height == source.height, "\(label)")
                    #expect(Self.aspectWithinAPixel(output, box.width, box.height), "\(label): \(output.width)×\(output.height)")
                }
            }
        }
    }

    /// Whether the output's aspect is `width`:`height` up to rounding each edge to a pixel.
    static func aspectWithinAPixel(_ output: Thumbnailer.Output, _ width: Int, _ height: Int) -> Bool {
        let expectedWidth = Double(output.height) * Double(width) / Double(height)
        let expectedHeight = Double(output.width) * Double(height) / Double(width)
        return abs(Double(output.width) - expectedWidth) <= 1 || abs(Double(output.height) - expectedHeight) <= 1
    }

    @Test("GetRendition's FILL enlarges to exactly the box; the thumbnails' FILL never does")
    func enlargingFill() throws {
        let jpeg = try JPEG.encode(TestImages.gradient(width: 100, height: 50), quality: 90)
        let outputs = try Thumbnailer().thumbnails(of: jpeg, sizes: [
            .init(width: 256, height: 256, fit: .fill, enlargesToFill: true), .init(longestEdge: 256, fit: .fill),
        ])
        #expect(outputs.map { [$0.width, $0.height] } == [[256, 256], [50, 50]])
    }

    @Test("several sizes from one decode: the largest, and any its decode scale serves, are the bytes each makes alone")
    func severalSizesFromOneDecode() throws {
        let data = try TestImages.photo("Landscape_1.jpg")
        let thumbnailer = Thumbnailer()
        func alone(_ edge: Int) throws -> Thumbnailer.Output { try thumbnailer.thumbnails(of: data, sizes: [.init(longestEdge: edge)])[0] }
        // 1800×1200: 900 and 1024 both decode at full size.
        let pair = try thumbnailer.thumbnails(of: data, sizes: [.init(longestEdge: 900), .init(longestEdge: 1024)])
        let (only900, only1024) = (try alone(900), try alone(1024))
        #expect(pair[0].data == only900.data && pair[1].data == only1024.data)
        // 64 and 256 alone decode at 1/8 and 1/2; beside the 1024 they are averaged from the
        // full-size decode instead: the same picture, not the same bytes (DCT scaling is a
        // block filter of its own). Measured 2.4 per byte at 64×43 and 1.9 at 256×171, JPEG
        // noise at quality 80 included; 4 would still catch a shifted or blurred picture.
        let set = try thumbnailer.thumbnails(of: data, sizes: [.init(longestEdge: 64), .init(longestEdge: 256), .init(longestEdge: 1024)])
        #expect(set.map(\.width) == [64, 256, 1024] && set.map(\.height) == [43, 171, 683])
        #expect(set[2].data == only1024.data)
        for (output, edge) in zip(set.prefix(2), [64, 256]) {
            let single = try alone(edge)
            #expect(single.width == output.width && single.height == output.height)
            let difference = TestImages.meanAbsoluteDifference(try JPEG.decode(output.data), try JPEG.decode(single.data))
            #expect(difference < 4, "\(edge): \(difference)")
        }
    }

    @Test("the pipeline is the DCT-scaled decode, shrunk with Catmull-Rom and encoded progressive at the quality asked for (80 by default) or up its ladder")
    func quality() throws {
        let data = try TestImages.photo("Landscape_1.jpg")
        let sizes = [Thumbnailer.Target(longestEdge: 256)]
        let standard = try Thumbnailer().thumbnails(of: data, sizes: sizes)[0].data
        // 1800×1200 for 256×171: at least 512×342 decoded, which is 1/2, 900×600 (3/8, 675×450,
        // would cover it too, but is not one of the SIMD scales).
        let decoded = try JPEG.decode(data, targetSize: (512, 342))
        #expect(Thumbnailer.defaultQuality == 80)
        #expect(standard == (try Thumbnailer(quality: 80).thumbnails(of: data, sizes: sizes)[0].data))
        #expect(try Thumbnailer(quality: 30).thumbnails(of: data, sizes: sizes)[0].data.count < standard.count)
        // Byte for byte the decode at that scale, shrunk with Catmull-Rom, encoded by the ladder from 80.
        #expect(decoded.width == 900 && decoded.height == 600)
        let resized = decoded.resized(width: 256, height: 171, filter: .catmullRom)
        let laddered = try Thumbnailer.encodeKeepingStructure(resized, quality: 80, subsampling: .s420, segments: [])
        #expect(standard == laddered.data)
        #expect(try JPEG.encode(resized, quality: laddered.quality, subsampling: .s420, segments: [], progressive: true) == standard)
        #expect(try JPEG.validate(standard).scans > 1, "a progressive JPEG has several scans")
    }
}

/// What a worker weighs a job by before it decodes: `Thumbnailer.workingBytes`.
@Suite struct WorkingBytesTests {
    @Test func aProgressiveFrameAddsEveryCoefficientOfTheFullImageAtAnyScale() throws {
        let image = TestImages.gradient(width: 2000, height: 1500)
        let baseline = try JPEG.encode(image, quality: 80)
        let progressive = try JPEG.encodeProgressive(image, quality: 80)
        let sizes = [Thumbnailer.Target(longestEdge: 256)]
        // A 256 FIT decodes at 1/2 (1000×750: 1/4 would leave less than twice 256×192).
        let pixels = 1000 * 750 * 3, largest = 256 * 192 * 11  // its encode: `Thumbnailer.encodingBytes`
        #expect(try Thumbnailer().workingBytes(of: baseline, sizes: sizes) == pixels + largest)
        // 4:2:0 in MCUs of 16×16: 125 × 94 of them, four Y blocks and one of each chroma, 128 bytes a block.
        let coefficients = 125 * 94 * 6 * 128
        #expect(try Thumbnailer().workingBytes(of: progressive, sizes: sizes) == pixels + largest + coefficients)
    }

    @Test func anOrientationThatTurnsThePixelsCountsTheirUprightCopyAndABadHeaderThrows() throws {
        let upright = try TestImages.photo("Landscape_1.jpg"), turned = try TestImages.photo("Landscape_6.jpg")
        let sizes = [Thumbnailer.Target(longestEdge: 64)]
        let plain = try Thumbnailer().workingBytes(of: upright, sizes: sizes)
        let header = try JPEG.header(of: turned)
        let decoded = JPEG.scaledSize(of: header, toCover: (128, 128))
        let extra = try Thumbnailer().workingBytes(of: turned, sizes: sizes) - plain
        #expect(extra == decoded.width * decoded.height * 3, "the upright copy of \(decoded)")
        #expect(throws: JPEGError.self) { try Thumbnailer().workingBytes(of: Array(upright.prefix(100)), sizes: sizes) }
        #expect(throws: JPEGError.self) { try Thumbnailer().workingBytes(of: [0x89, 0x50, 0x4E, 0x47], sizes: sizes) }
    }
}
