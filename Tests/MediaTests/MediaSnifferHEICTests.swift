import Dispatch
import Media
import Proto
import Testing
import TestSupport

/// HEICs as PutImage classifies them: validated whole (boxes, limits, a decode), their size as
/// displayed, when they were taken; an ftyp of a HEIF brand with nothing behind it refused.
@Suite struct MediaSnifferHEICTests {
    static let decodeSlots = DispatchSemaphore(value: 1)

    @Test func aHEICIsValidatedWholeAndReportedAsDisplayedWhenItWasTaken() throws {
        let jpeg = EXIFSamples.inserting(
            EXIFSamples.app1([EXIFSamples.dateTimeOriginal("2023:12:24 18:00:01")]), into: try Fixtures.pillowImage("hopper.jpg"))
        let heic = try TestHEICs.oriented(try TestHEICs.encode(jpeg: jpeg), TestHEICs.transforms(forEXIF: 6))
        let media = try MediaSniffer.classify(heic, maxPixels: 1 << 20, decodeSlots: Self.decodeSlots)
        #expect(media.mediaType == .image && media.contentType == "image/heic" && media.width == 128 && media.height == 128)
        #expect(media.orientation == 0 && media.takenAt == "2023-12-24T18:00:01")
        // A portrait photo turned by irot: its width and height are the displayed ones.
        let portrait = try TestHEICs.oriented(
            TestHEICs.encode(jpegFile: Fixtures.orientationFolder.appendingPathComponent("Portrait_6.jpg")), TestHEICs.transforms(forEXIF: 6))
        let turned = try MediaSniffer.classify(portrait, maxPixels: 1 << 26, decodeSlots: Self.decodeSlots)
        #expect(turned.width == 1200 && turned.height == 1800)
    }

    @Test(arguments: ["heic", "mif1"])
    func anFtypOfAHEIFBrandWithNothingBehindItIsRefusedAsDamaged(_ brand: String) throws {
        let data = [0, 0, 0, 24] + Array("ftyp".utf8) + Array(brand.utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8) + [1, 2, 3]
        let refused = try #require(throws: MediaError.self) { try MediaSniffer.classify(data, maxPixels: 1000, decodeSlots: Self.decodeSlots) }
        #expect(refused.message.hasPrefix("data: HEIC is "), "\(refused.message)")
    }

    @Test func aHEICOverThePixelLimitIsRefusedFromItsBoxesNamingTheFlag() throws {
        let heic = try TestHEICs.encode(jpeg: try Fixtures.pillowImage("hopper.jpg"))
        let refused = try #require(throws: MediaError.self) { try MediaSniffer.classify(heic, maxPixels: 1000, decodeSlots: Self.decodeSlots) }
        #expect(refused.message == "data: HEIC of 128×128 = 16384 pixels is over the limit of 1000 pixels (--max-pixels)")
        let big = try #require(throws: MediaError.self) {
            try MediaSniffer.classify(heic, maxPixels: 1 << 20, maxDecodeBytes: 100, decodeSlots: Self.decodeSlots)
        }
        #expect(big.message.hasPrefix("data: HEIC of \(heic.count) bytes is over the limit of 100 bytes (--max-rendition-source-bytes)"))
    }
}
