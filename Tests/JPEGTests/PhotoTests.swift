import Foundation
import JPEG
import Testing

/// The shared EXIF orientation photos: every file must come out upright and like `*_1.jpg`.
@Suite("Orientation photos")
struct PhotoTests {
    /// Measured: correctly oriented files differ from `*_1.jpg` by at most 0.7 per byte at 1/20 size
    /// (re-encoding noise); a wrong transform differs by 35 or more.
    static let uprightThreshold = 2.0
    static let wrongThreshold = 10.0

    /// `*_1.jpg` decoded and shrunk to 1/20 once, shared by every case (decoding it per case doubled the run time).
    static let references: [String: Result<RGBImage, any Error>] = Dictionary(
        uniqueKeysWithValues: ["Landscape", "Portrait"].map { kind in
            (kind, Result { try JPEG.decode(TestImages.photo("\(kind)_1.jpg")) })
        }
    )

    /// Shrinks to the 1/20 comparison size of `*_1.jpg`.
    static func comparable(_ image: RGBImage) -> RGBImage {
        image.resized(width: image.width / 20, height: image.height / 20)
    }

    static let files: [(kind: String, orientation: Int)] =
        ["Landscape", "Portrait"].flatMap { kind in (0...8).map { (kind, $0) } }

    @Test("header reports the stored size and the EXIF orientation named in each file name", arguments: files)
    func headerOfEveryFile(kind: String, orientation: Int) throws {
        let data = try TestImages.photo("\(kind)_\(orientation).jpg")
        let header = try JPEG.header(of: data)
        let upright = kind == "Landscape" ? (width: 1800, height: 1200) : (width: 1200, height: 1800)
        // Files 5...8 store the picture transposed, so their stored size is swapped.
        let stored = orientation >= 5 ? (width: upright.height, height: upright.width) : upright
        #expect(header.width == stored.width)
        #expect(header.height == stored.height)
        #expect(header.orientation == max(orientation, 1))
        #expect(header.orientedSize == upright)
        #expect(header.colorSpace == .yCbCr)
        #expect(header.subsampling == "4:2:0")
        #expect(EXIF.orientation(in: data) == (orientation == 0 ? nil : orientation))
    }

    @Test("every file decodes upright after oriented() with the size and content of *_1.jpg", arguments: files)
    func orientedMatchesReference(kind: String, orientation: Int) throws {
        let reference = try #require(Self.references[kind]).get()
        let data = try TestImages.photo("\(kind)_\(orientation).jpg")
        let upright = try JPEG.decode(data).oriented(JPEG.header(of: data).orientation)
        #expect(upright.width == reference.width)
        #expect(upright.height == reference.height)
        let difference = TestImages.meanAbsoluteDifference(Self.comparable(upright), Self.comparable(reference))
        #expect(difference < Self.uprightThreshold)
    }

    @Test("the comparison catches a wrong transform (identity for 2…4, the mirror-image rotation for 5…8)", arguments: 2...8)
    func wrongTransformIsCaught(orientation: Int) throws {
        let reference = try #require(Self.references["Landscape"]).get()
        let stored = try JPEG.decode(TestImages.photo("Landscape_\(orientation).jpg"))
        // 6 and 8 (clockwise vs counter-clockwise) and 5 and 7 are the classic mix-ups.
        let wrong = [2: 1, 3: 1, 4: 1, 5: 7, 6: 8, 7: 5, 8: 6][orientation]!
        let image = stored.oriented(wrong)
        #expect(image.width == reference.width && image.height == reference.height)
        let difference = TestImages.meanAbsoluteDifference(Self.comparable(image), Self.comparable(reference))
        #expect(difference > Self.wrongThreshold)
    }

    @Test("a target size picks the smallest DCT scale of 1/2, 1/4 and 1/8 that still covers it")
    func scaledDecode() throws {
        let data = try TestImages.photo("Landscape_1.jpg")
        // 1800×1200: 1/8 gives 225×150, 1/2 900×600 (3/8, 675×450, is not one of the SIMD scales).
        let thumb = try JPEG.decode(data, targetSize: (width: 200, height: 100))
        #expect(thumb.width == 225 && thumb.height == 150)
        let medium = try JPEG.decode(data, targetSize: (width: 500, height: 300))
        #expect(medium.width == 900 && medium.height == 600)
        #expect(medium.width >= 500 && medium.height >= 300 && medium.width < 1800)
        // A target larger than the image decodes at full size, never upscaled by the DCT.
        let full = try JPEG.decode(data, targetSize: (width: 4000, height: 100))
        #expect(full.width == 1800 && full.height == 1200)
        // The scaled decode shows the same picture as a full decode scaled down.
        let reference = try JPEG.decode(data).resized(width: 225, height: 150)
        #expect(TestImages.meanAbsoluteDifference(thumb, reference) < 3)
    }

    @Test("the first half of a photo is reported as truncated, not returned as a half-grey image")
    func truncatedPhoto() throws {
        let data = try TestImages.photo("Landscape_1.jpg")
        let half = Array(data.prefix(data.count / 2))
        // The header is still complete in the first half.
        #expect(try JPEG.header(of: half).width == 1800)
        let error = try #require(throws: JPEGError.self) { try JPEG.decode(half) }
        #expect(error.kind == .truncated)
        #expect(error.message.contains("Premature end"))
        // Cut before the frame header: TurboJPEG 2.1 reports success with no size, which must still fail.
        for length in [3, 20, 100, 200] {
            let header = try #require(throws: JPEGError.self) { try JPEG.header(of: Array(data.prefix(length))) }
            #expect(header.kind == .truncated)
        }
    }

    @Test("bytes overwritten in the middle of the entropy data are reported as corrupt")
    func corruptPhoto() throws {
        var data = try TestImages.photo("Landscape_1.jpg")
        let start = data.count / 3
        for i in start..<(start + 2000) { data[i] = UInt8(truncatingIfNeeded: i &* 7) }
        let error = try #require(throws: JPEGError.self) { try JPEG.decode(data) }
        #expect(error.kind == .corrupt)
    }
}
