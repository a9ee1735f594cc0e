@testable import JPEG
import Testing
import TestSupport

/// What the photo edit keeps and refuses: the ICC profile and no other metadata, grey and CMYK
/// originals, and every bad edit or bad original with an error that names what was wrong.
@Suite("PhotoEdit inputs")
struct PhotoEditInputTests {
    typealias Rect = PhotoEdit.Rect
    typealias Images = PhotoEditImages

    /// Originals with metadata, and an edit of each path: lossless, re-encoded, circle.
    static let metadataCases: [(name: String, edit: PhotoEdit, lossless: Bool)] = [
        ("pil_sample_rgb.jpg", PhotoEdit(crop: Rect(x: 8, y: 8, width: 50, height: 50)), true),
        ("pil_sample_rgb.jpg", PhotoEdit(crop: Rect(x: 3, y: 3, width: 50, height: 50)), false),
        ("pil_sample_rgb.jpg", PhotoEdit(shape: .circle, outputSize: 64), false),
        ("icc_profile_big.jpg", PhotoEdit(crop: Rect(x: 8, y: 8, width: 200, height: 100)), true),
        ("icc_profile_big.jpg", PhotoEdit(crop: Rect(x: 3, y: 3, width: 200, height: 100), zoom: 1.25), false),
        ("exif_gps.jpg", PhotoEdit(), true),
        ("exif_gps.jpg", PhotoEdit(shape: .circle), false),
        ("hopper_gray.jpg", PhotoEdit(crop: Rect(x: 16, y: 16, width: 30, height: 30)), true),
    ]

    @Test("the output keeps the ICC profile byte for byte and carries no EXIF, GPS, XMP, IPTC or comment", arguments: 0..<8)
    func metadata(index: Int) throws {
        let (name, edit, lossless) = Self.metadataCases[index]
        let source = try TestImages.pillow(name)
        #expect(TestImages.headerSegments(of: source).contains { [0xE1, 0xE2, 0xED, 0xFE].contains($0.marker) }, "\(name) has metadata")
        let output = try PhotoEditor().edit(source, edit)
        #expect(output.lossless == lossless, "\(name) \(edit)")
        #expect(try JPEG.validate(output.data).end == output.data.count)
        #expect(TestImages.iccProfile(of: output.data) == TestImages.iccProfile(of: source), "\(name)")
        let segments = TestImages.headerSegments(of: output.data)
        let markers = segments.map(\.marker)
        // JFIF first, then the ICC chunks (APP2) in order, then no other APPn or COM.
        #expect(markers.first == 0xE0 && segments[0].payload.starts(with: Array("JFIF\0".utf8)), "\(name): \(markers)")
        #expect(markers.allSatisfy { !(0xE1...0xEF).contains($0) || $0 == 0xE2 } && !markers.contains(0xFE), "\(name): \(markers)")
        let icc = markers.indices.filter { markers[$0] == 0xE2 }
        #expect(icc == Array(1..<(1 + icc.count)), "\(name): \(markers)")
        for signature in ["Exif", "http://ns.adobe.com", "Photoshop"] {
            #expect(output.data.firstRange(of: Array(signature.utf8)) == nil, "\(name): \(signature) in the output")
        }
        #expect(EXIF.orientation(in: output.data) == nil)
    }

    @Test("a grey original stays grey unless a colour background shows; a grey profile goes with the grey")
    func grey() throws {
        let source = try TestImages.pillow("hopper_gray.jpg")
        let original = try JPEG.decode(source)
        let crop = Rect(x: 5, y: 5, width: 64, height: 64)
        let (cropped, image) = try Images.edited(source, PhotoEdit(crop: crop, outputSize: 32))
        #expect(!cropped.lossless)
        #expect(try JPEG.header(of: cropped.data).colorSpace == .gray)
        // Its luma is what a 4:2:0 encode of the same pixels keeps.
        let reference = try Images.reencoded(original.cropped(x: 5, y: 5, width: 64, height: 64).resized(width: 32, height: 32))
        let difference = TestImages.meanAbsoluteDifference(image, reference)
        #expect(difference < 0.5, "\(difference)")
        let white = try PhotoEditor().edit(source, PhotoEdit(crop: crop, shape: .circle))
        #expect(try JPEG.header(of: white.data).colorSpace == .gray)
        let red = PhotoEdit.Color(r: 220, g: 20, b: 20)
        var edit = PhotoEdit(crop: crop, shape: .circle)
        edit.background = red
        let (coloured, colouredImage) = try Images.edited(source, edit)
        #expect(try JPEG.header(of: coloured.data).colorSpace == .yCbCr)
        #expect(Images.near(colouredImage.pixel(x: 0, y: 0), red, 10), "\(colouredImage.pixel(x: 0, y: 0))")
        let centre = colouredImage.pixel(x: 32, y: 32), expected = original.pixel(x: 37, y: 37)
        #expect(abs(Int(centre.r) - Int(expected.r)) <= 10 && centre.r == centre.g, "\(centre) against \(expected)")
    }

    @Test("a CMYK (Adobe YCCK) original is edited to RGB: red top left, black bottom right, its own picture")
    func cmyk() throws {
        let source = try TestImages.pillow("pil_sample_cmyk.jpg")
        #expect(try JPEG.header(of: source).colorSpace == .ycck)
        let crop = Rect(x: 0, y: 0, width: 96, height: 96)
        let (output, image) = try Images.edited(source, PhotoEdit(crop: crop))
        #expect(!output.lossless)
        #expect(try JPEG.header(of: output.data).colorSpace == .yCbCr)
        // Its CMYK profile describes other samples than the output's: it goes.
        #expect(TestImages.iccProfile(of: output.data) == nil)
        let red = image.pixel(x: 2, y: 2), black = image.pixel(x: 93, y: 93)
        #expect(red.r > 200 && red.g < 60 && red.b < 60, "\(red)")
        #expect(black.r < 40 && black.g < 40 && black.b < 40, "\(black)")
        let expected = try Images.reencoded(try JPEG.decode(source).cropped(x: 0, y: 0, width: 96, height: 96))
        let difference = TestImages.meanAbsoluteDifference(image, expected)
        #expect(difference < 0.5, "\(difference)")
        // TurboJPEG's own CMYK inks: a crop of the cyan quadrant is cyan.
        var samples: [UInt8] = []
        for y in 0..<32 { for x in 0..<32 { samples += (x < 16 && y < 16) ? [0, 255, 255, 255] : [255, 255, 255, 128] } }
        let inks = try JPEG.encodeCMYK(samples, width: 32, height: 32, quality: 100)
        let (_, cyan) = try Images.edited(inks, PhotoEdit(crop: Rect(x: 2, y: 2, width: 12, height: 12)))
        #expect(Images.near(Images.mean(cyan, Rect(x: 2, y: 2, width: 8, height: 8)), .init(r: 0, g: 255, b: 255), 8))
    }

    @Test("originals with extraneous bytes between their segments are edited as libjpeg reads them, on either path")
    func extraneousBytes() throws {
        for file in QuirkyJPEGs.files {
            let data = try Fixtures.pillowImage(file.name)
            let clean = QuirkyJPEGs.removing(file.run, from: data)
            let colorSpace = try JPEG.header(of: data).colorSpace
            let edits = [
                PhotoEdit(crop: Rect(x: 0, y: 0, width: file.width / 2, height: file.height / 2)),
                PhotoEdit(crop: Rect(x: 1, y: 1, width: file.width / 2, height: file.height / 2), shape: .circle),
            ]
            for edit in edits {
                let output = try PhotoEditor().edit(data, edit)
                #expect(output.lossless == (edit.shape == .rectangle && [.yCbCr, .gray].contains(colorSpace)), "\(file.name) \(colorSpace)")
                #expect(output.data == (try PhotoEditor().edit(clean, edit)).data, "\(file.name)")
            }
        }
    }

    @Test("an empty crop is refused, by validate without the image and by edit")
    func emptyCrop() throws {
        let source = try Images.blocksJPEG()
        for (crop, text) in [(Rect(x: 10, y: 10, width: 0, height: 20), "10,10,0,20"), (Rect(x: 0, y: 0, width: 5, height: -3), "0,0,5,-3")] {
            let message = "crop \(text) is empty: its width and height must be positive"
            let error = try #require(Images.refusal(source, PhotoEdit(crop: crop)))
            #expect(error.kind == .invalidEdit && error.message == message, "\(error)")
            #expect(error.description == "invalid photo edit: \(message)")
            do {
                try PhotoEditor().validate(PhotoEdit(crop: crop))
                Issue.record("validate accepted \(crop)")
            } catch {
                #expect(error.message == message)
            }
        }
    }

    @Test("a crop outside the upright image is refused naming the rectangle and the upright size")
    func cropOutside() throws {
        let upright = try TestImages.photo("Landscape_1.jpg")
        // Stored 1200×1800, upright 1800×1200.
        let turned = try TestImages.photo("Landscape_6.jpg")
        let cases: [(source: [UInt8], crop: Rect)] = [
            (upright, Rect(x: 10, y: 10, width: 5000, height: 20)),
            (upright, Rect(x: -1, y: 0, width: 10, height: 10)),
            (upright, Rect(x: 1800, y: 0, width: 1, height: 1)),
            (upright, Rect(x: 0, y: 1100, width: 10, height: 101)),
            (upright, Rect(x: Int.max, y: 0, width: Int.max, height: 1)),
            (turned, Rect(x: 0, y: 0, width: 100, height: 1500)),
        ]
        for (source, crop) in cases {
            let error = try #require(Images.refusal(source, PhotoEdit(crop: crop)))
            #expect(error.kind == .invalidEdit, "\(error)")
            #expect(error.message == "crop \(crop) is outside the upright image (1800×1200)", "\(error)")
            // Not something validate can know.
            #expect(throws: Never.self) { try PhotoEditor().validate(PhotoEdit(crop: crop)) }
        }
        // The upright rectangle the stored one could not hold.
        #expect(Images.refusal(turned, PhotoEdit(crop: Rect(x: 0, y: 0, width: 1500, height: 100))) == nil)
        #expect(Images.refusal(upright, PhotoEdit(crop: Rect(x: 1799, y: 1199, width: 1, height: 1))) == nil)
    }

    @Test("a zoom that is not finite or outside (0, 64] is refused naming it", arguments: [Double.nan, 0, -1, .infinity, -.infinity, 65, 64.000001])
    func badZoom(zoom: Double) throws {
        let error = try #require(Images.refusal(try Images.blocksJPEG(), PhotoEdit(zoom: zoom)))
        #expect(error.kind == .invalidEdit)
        #expect(error.message == "zoom must be finite and in (0, 64] (got \(zoom))", "\(error)")
        #expect(throws: PhotoEditError.self) { try PhotoEditor().validate(PhotoEdit(zoom: zoom)) }
    }

    @Test("zooms at the ends of the range are made")
    func extremeZooms() throws {
        for zoom in [64, 0.001, 1e-300] {
            let output = try PhotoEditor().edit(try Images.blocksJPEG(), PhotoEdit(crop: Rect(x: 10, y: 10, width: 30, height: 20), zoom: zoom))
            #expect(output.width == 30 && output.height == 20)
        }
    }

    @Test("an output size outside 1...8192 and a quality outside 1...100 are refused naming them")
    func badSizes() throws {
        let source = try Images.blocksJPEG()
        for size in [0, -5, 9000, Int.min] {
            let error = try #require(Images.refusal(source, PhotoEdit(outputSize: size)))
            #expect(error.kind == .invalidEdit && error.message == "outputSize must be in 1...8192 (got \(size))", "\(error)")
        }
        for quality in [0, 101, -1] {
            let error = try #require(Images.refusal(source, PhotoEdit(quality: quality)))
            #expect(error.kind == .invalidEdit && error.message == "quality must be in 1...100 (got \(quality))", "\(error)")
        }
        #expect(Images.refusal(source, PhotoEdit(outputSize: 1, quality: 1)) == nil)
    }

    @Test("a cut-off JPEG is refused as truncated, in the structure walk's words, whichever path the edit would take")
    func truncated() throws {
        let photo = try TestImages.photo("Landscape_1.jpg")
        let half = Array(photo.prefix(photo.count / 2))
        for edit in [PhotoEdit(), PhotoEdit(crop: Rect(x: 3, y: 3, width: 10, height: 10)), PhotoEdit(shape: .circle)] {
            let error = try #require(Images.refusal(half, edit))
            guard case .image(let jpeg) = error.kind else {
                Issue.record("\(error)")
                continue
            }
            #expect(jpeg.kind == .truncated)
            #expect(error.message == "the data ends at offset \(half.count) inside the entropy-coded data of scan 1, before EOI", "\(error)")
            #expect(error.description == jpeg.description)
        }
    }

    @Test("bytes that are not a JPEG, and no bytes, are refused as not a JPEG")
    func notJPEG() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        for bytes in [Array("hello".utf8), png, [], [0xFF, 0xD8]] {
            let error = try #require(Images.refusal(bytes, PhotoEdit(crop: Rect(x: 0, y: 0, width: 1, height: 1))))
            #expect(error.kind == .image(JPEGError(kind: .notJPEG, message: "data does not start with the JPEG SOI marker FF D8 FF")), "\(error)")
            #expect(error.message == "data does not start with the JPEG SOI marker FF D8 FF")
        }
    }

    @Test("a header claiming 65000×65000 is refused as too many pixels before any pixel or coefficient is allocated")
    func pixelBomb() throws {
        var jpeg = try JPEG.encode(TestImages.gradient(width: 16, height: 16), quality: 80)
        let sof = try #require(TestImages.sof0Offset(in: jpeg))
        // SOF0: FF C0, length (2), precision (1), height (2), width (2). 65000 = FD E8.
        jpeg.replaceSubrange((sof + 5)..<(sof + 9), with: [0xFD, 0xE8, 0xFD, 0xE8])
        // The full decode would be 12.7 GB of RGB, the lossless crop's coefficients 12.7 GB
        // too: reaching either allocation would crash this test.
        let edits = [
            PhotoEdit(), PhotoEdit(crop: Rect(x: 0, y: 0, width: 16, height: 16)),
            PhotoEdit(crop: Rect(x: 0, y: 0, width: 100, height: 100), shape: .circle, outputSize: 50),
        ]
        for edit in edits {
            let error = try #require(Images.refusal(jpeg, edit))
            guard case .image(let jpegError) = error.kind else {
                Issue.record("\(error)")
                continue
            }
            #expect(jpegError.kind == .tooManyPixels(width: 65000, height: 65000, limit: 100_000_000))
            #expect(error.message == "65000×65000 = 4225000000 pixels exceeds the limit of 100000000")
        }
        // And the limit is the editor's options'.
        let limited = try #require(Images.refusal(try Images.blocksJPEG(), PhotoEdit(), options: DecodeOptions(maxPixels: 1000)))
        #expect(limited.message == "96×64 = 6144 pixels exceeds the limit of 1000")
    }
}
