import Foundation
import Testing

@testable import PDF

@Suite struct PDFImageTests {
    /// One row of `pdfimages -list`: the fields the tests look at.
    struct Listed: Equatable {
        var width: Int
        var height: Int
        var color: String
        var components: Int
        var encoding: String
    }

    static func listImages(_ path: String) throws -> [Listed] {
        let text = try Tool.run("pdfimages", ["-list", path]).text
        return text.split(separator: "\n").dropFirst(2).map { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            return Listed(width: Int(fields[3]) ?? -1, height: Int(fields[4]) ?? -1, color: fields[5], components: Int(fields[6]) ?? -1, encoding: fields[8])
        }
    }

    @Test func pdfimagesListsEachJPEGWithItsSizeAndColourSpace() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("photos.pdf")
        let document = try PDFDocument(path: path)
        let names = [
            "pillow/hopper.jpg", "pillow/hopper_gray.jpg", "pillow/pil_sample_cmyk.jpg", "pillow/icc_profile_big.jpg",
            "exif-orientation/Portrait_1.jpg", "pillow/junk_jpeg_header.jpg",
        ]
        let page = document.beginPage()
        for (index, name) in names.enumerated() {
            let image = try document.addJPEG(try Fixtures.bytes(name))
            page.drawImage(image, in: image.fit(into: PDFRect(x: 40 + Double(index % 3) * 180, y: 40 + Double(index / 3) * 180, width: 160, height: 160)))
        }
        try document.endPage()
        try document.finish()

        try Tool.checkStructure(of: path)
        let listed = try Self.listImages(path)
        #expect(
            listed == [
                Listed(width: 128, height: 128, color: "rgb", components: 3, encoding: "jpeg"),
                Listed(width: 128, height: 128, color: "gray", components: 1, encoding: "jpeg"),
                Listed(width: 100, height: 100, color: "cmyk", components: 4, encoding: "jpeg"),
                Listed(width: 425, height: 250, color: "rgb", components: 3, encoding: "jpeg"),
                Listed(width: 1200, height: 1800, color: "rgb", components: 3, encoding: "jpeg"),
                Listed(width: 1024, height: 768, color: "rgb", components: 3, encoding: "jpeg"),
            ])
        #expect(try Tool.render(path, page: 1).inkedPixels > 10_000)
    }

    @Test func jpegBytesAreEmbeddedUnchanged() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("unchanged.pdf")
        let original = try Fixtures.bytes("pillow/hopper.jpg")
        let document = try PDFDocument(path: path)
        let image = try document.addJPEG(original)
        #expect(image.width == 128 && image.height == 128 && image.colorSpace == .rgb)
        document.beginPage().drawImage(image, in: PDFRect(x: 0, y: 0, width: 128, height: 128))
        try document.endPage()
        try document.finish()

        _ = try Tool.run("pdfimages", ["-j", path, folder.path("out")])
        let extracted = try Array(Data(contentsOf: URL(fileURLWithPath: folder.path("out-000.jpg"))))
        #expect(extracted == original)
    }

    @Test func adobeCMYKIsMarkedInvertedAndRendersRedAtTheTopLeft() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("cmyk.pdf")
        let document = try PDFDocument(path: path)
        let image = try document.addJPEG(try Fixtures.bytes("pillow/pil_sample_cmyk.jpg"))
        #expect(image.colorSpace == .cmyk)
        document.beginPage(size: PDFPageSize(width: 240, height: 240)).drawImage(image, in: PDFRect(x: 0, y: 0, width: 240, height: 240))
        try document.endPage()
        try document.finish()

        let file = try String(decoding: Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        #expect(file.contains("/ColorSpace /DeviceCMYK /BitsPerComponent 8 /Decode [1 0 1 0 1 0 1 0]"))
        // Pillow's sample: red at the top left, black at the bottom right. Inverted, it would be
        // cyan on white.
        let rendered = try Tool.run("pdftoppm", ["-r", "30", path]).stdout
        let ppm = [UInt8](rendered)
        let header = ppm.indices.filter { ppm[$0] == 0x0A }.prefix(3).last! + 1
        let width = 100
        func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
            let at = header + (y * width + x) * 3
            return (Int(ppm[at]), Int(ppm[at + 1]), Int(ppm[at + 2]))
        }
        let topLeft = pixel(3, 3), bottomRight = pixel(96, 96)
        #expect(topLeft.0 > 150 && topLeft.1 < 100 && topLeft.2 < 100, "top left \(topLeft)")
        #expect(bottomRight.0 < 80 && bottomRight.1 < 80 && bottomRight.2 < 80, "bottom right \(bottomRight)")
    }

    /// The orientation photos show one scene, stored turned and mirrored eight ways: drawn with
    /// their EXIF orientation applied they all render alike, while a mirrored rendering differs.
    @Test func exifOrientationIsAppliedSoEveryOrientationRendersAlike() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("orientation.pdf")
        let document = try PDFDocument(path: path)
        for orientation in 1...8 {
            let image = try document.addJPEG(try Fixtures.bytes("exif-orientation/Landscape_\(orientation).jpg"))
            #expect(image.orientation == orientation)
            #expect(image.displayWidth == 1800 && image.displayHeight == 1200)
            let page = document.beginPage(size: PDFPageSize(width: 360, height: 240))
            page.drawImage(image, in: image.fit(into: page.size.bounds))
            try document.endPage()
        }
        try document.finish()

        let upright = try Tool.render(path, page: 1)
        let mirroredDifference = upright.meanDifference(from: upright.mirrored)
        #expect(mirroredDifference > 20, "the scene should not look the same mirrored (\(mirroredDifference))")
        for page in 2...8 {
            let difference = try Tool.render(path, page: page).meanDifference(from: upright)
            // The photos' "1"…"8" labels differ; the scene is the rest of the picture.
            #expect(difference < mirroredDifference / 3, "orientation \(page) differs by \(difference) (mirrored: \(mirroredDifference))")
        }
    }

    @Test func fitKeepsTheAspectRatioAsSeenCentredInTheSpace() throws {
        let folder = try TemporaryFolder()
        let document = try PDFDocument(path: folder.path("fit.pdf"))
        let portrait = try document.addJPEG(try Fixtures.bytes("exif-orientation/Landscape_6.jpg"))
        #expect(portrait.width == 1200 && portrait.height == 1800)
        let fitted = portrait.fit(into: PDFRect(x: 10, y: 20, width: 300, height: 100))
        #expect(fitted == PDFRect(x: 85, y: 20, width: 150, height: 100))
        let tall = PDFRect(x: 0, y: 0, width: 100, height: 400).aspectFit(width: 200, height: 100)
        #expect(tall == PDFRect(x: 0, y: 175, width: 100, height: 50))
    }

    @Test func extraneousBytesBetweenSegmentsAreAcceptedAsViewersDo() throws {
        let folder = try TemporaryFolder()
        let document = try PDFDocument(path: folder.path("quirks.pdf"))
        for name in ["junk_jpeg_header.jpg", "jpeg_ff00_header.jpg", "truncated_app14.jpg", "photoshop-200dpi-broken.jpg"] {
            let image = try document.addJPEG(try Fixtures.bytes("pillow/\(name)"))
            #expect(image.width > 0 && image.height > 0, "\(name)")
        }
    }

    @Test(arguments: [
        ("empty", [UInt8](), "the data is empty (0 bytes)"),
        ("garbage", Array("GIF89a, not a photo".utf8), "do not start with the SOI marker FF D8 (they start 47 49 46 38)"),
        ("SOI only", [0xFF, 0xD8, 0xFF, 0xD9], "EOI marker at byte 2 before any frame header"),
    ])
    func garbageIsRefusedAsInvalid(name: String, bytes: [UInt8], message: String) throws {
        let folder = try TemporaryFolder()
        let document = try PDFDocument(path: folder.path("garbage.pdf"))
        let error = #expect(throws: PDFError.self, "\(name)") { try document.addJPEG(bytes) }
        #expect(error?.kind == .invalidJPEG)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test func truncatedJPEGsAreRefusedSayingSo() throws {
        let folder = try TemporaryFolder()
        let document = try PDFDocument(path: folder.path("truncated.pdf"))
        let hopper = try Fixtures.bytes("pillow/hopper.jpg")
        let cases: [(String, [UInt8], String)] = [
            ("cut in its header", Array(hopper.prefix(100)), "cut short"),
            ("cut in its scan", Array(hopper.prefix(hopper.count / 2)), "no EOI marker (FF D9) after the scan data"),
            ("progressive, cut in scan 10", try Fixtures.bytes("pillow/truncated_jpeg.jpg"), "no EOI marker (FF D9)"),
            ("cut after its SOS header", try Fixtures.bytes("pillow/ultrahdr.jpg"), "no EOI marker (FF D9)"),
        ]
        for (name, bytes, message) in cases {
            let error = #expect(throws: PDFError.self, "\(name)") { try document.addJPEG(bytes) }
            #expect(error?.kind == .invalidJPEG, "\(name)")
            #expect(error?.message.contains(message) == true, "\(name): \(error?.message ?? "")")
        }
        // Nothing refused was written: the document still finishes cleanly with what it has.
        document.beginPage().drawImage(try document.addJPEG(hopper), in: PDFRect(x: 0, y: 0, width: 10, height: 10))
        try document.endPage()
        try document.finish()
        try Tool.checkStructure(of: folder.path("truncated.pdf"))
    }

    @Test func zeroSizedAndUndrawableJPEGsAreRefused() throws {
        let folder = try TemporaryFolder()
        let document = try PDFDocument(path: folder.path("refused.pdf"))
        let hopper = try Fixtures.bytes("pillow/hopper.jpg")
        let sof = try #require(hopper.indices.first { hopper[$0] == 0xFF && hopper[$0 + 1] == 0xC0 })
        func patched(_ changes: [Int: UInt8]) -> [UInt8] {
            var bytes = hopper
            for (offset, value) in changes { bytes[sof + offset] = value }
            return bytes
        }
        // SOF0: FF C0, length (2), precision, height (2), width (2), components.
        let cases: [([UInt8], PDFError.Kind, String)] = [
            (patched([7: 0, 8: 0]), .invalidJPEG, "width of 0 pixels"),
            (patched([5: 0, 6: 0]), .invalidJPEG, "height of 0 pixels"),
            (patched([4: 12]), .unsupportedJPEG, "12-bit samples"),
            (patched([1: 0xC3]), .unsupportedJPEG, "SOF3 at byte \(sof) is lossless coding"),
            (patched([1: 0xC9]), .unsupportedJPEG, "arithmetic-coded"),
        ]
        for (bytes, kind, message) in cases {
            let error = #expect(throws: PDFError.self) { try document.addJPEG(bytes) }
            #expect(error?.kind == kind, "\(message)")
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        }
    }
}
