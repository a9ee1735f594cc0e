import Dispatch
import Media
import Proto
import Testing
import TestSupport

@Suite struct MediaSnifferTests {
    static let decodeSlots = DispatchSemaphore(value: 1)

    static func ftyp(_ brand: String) -> [UInt8] {
        [0, 0, 0, 24] + Array("ftyp".utf8) + Array(brand.utf8) + [0, 0, 0, 0] + Array("isommp41".utf8) + [1, 2, 3]
    }

    @Test func containersAreRecognisedBySignature() throws {
        let cases: [([UInt8], MediaType, String)] = [
            (Self.ftyp("isom"), .movie, "video/mp4"),
            (Self.ftyp("mp42"), .movie, "video/mp4"),
            (Self.ftyp("qt  "), .movie, "video/quicktime"),
            (Self.ftyp("3gp5"), .movie, "video/3gpp"),
            (Self.ftyp("avif"), .image, "image/avif"),
            ([0, 0, 0, 8] + Array("moov".utf8) + [0, 0], .movie, "video/quicktime"),
            ([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x82, 0x84] + Array("webm".utf8), .movie, "video/webm"),
            ([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x82, 0x88] + Array("matroska".utf8), .movie, "video/x-matroska"),
            (Array("RIFF".utf8) + [0, 0, 0, 0] + Array("AVI LIST".utf8), .movie, "video/x-msvideo"),
        ]
        for (data, mediaType, contentType) in cases {
            let media = try MediaSniffer.classify(data, maxPixels: 1000, decodeSlots: Self.decodeSlots)
            #expect(media.mediaType == mediaType && media.contentType == contentType, "\(contentType)")
        }
    }

    @Test func unknownAndWAVAreRefusedNamingWhatIsAccepted() throws {
        for data in [Array("RIFF\0\0\0\0WAVEfmt ".utf8), Array("GIF89a....".utf8), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]] {
            #expect(throws: MediaError.self) { try MediaSniffer.classify(data, maxPixels: 1000, decodeSlots: Self.decodeSlots) }
        }
        let gif = try #require(throws: MediaError.self) { try MediaSniffer.classify(Array("GIF89a....".utf8), maxPixels: 1000, decodeSlots: Self.decodeSlots) }
        #expect(gif.message == "data is not a JPEG or PNG image, a PDF document or a known movie container (first bytes: 47 49 46 38 39 61 2e 2e); accepted: JPEG, PNG, HEIC, PDF, MP4/MOV, Matroska/WebM, AVI")
    }

    @Test(arguments: 1...8)
    func aJPEGIsClassifiedWithItsStoredSizeAndOrientation(orientation: Int) throws {
        let data = try Fixtures.orientationPhoto("Portrait_\(orientation).jpg")
        let media = try MediaSniffer.classify(data, maxPixels: 1 << 26, decodeSlots: Self.decodeSlots)
        let stored = orientation >= 5 ? (1800, 1200) : (1200, 1800)
        #expect(media.mediaType == .image && media.contentType == "image/jpeg")
        #expect(media.width == stored.0 && media.height == stored.1 && media.orientation == orientation)
        #expect(media.extraneousBytes == 0 && media.firstExtraneousOffset == nil)
    }

    @Test func emptyDataAndAJPEGOverThePixelLimitAreRefusedSayingWhy() throws {
        let empty = try #require(throws: MediaError.self) { try MediaSniffer.classify([], maxPixels: 1000, decodeSlots: Self.decodeSlots) }
        #expect(empty.message == "data is empty")
        let data = try Fixtures.orientationPhoto("Portrait_1.jpg")
        let large = try #require(throws: MediaError.self) { try MediaSniffer.classify(data, maxPixels: 1000, decodeSlots: Self.decodeSlots) }
        #expect(large.message == "data: JPEG of 1200×1800 = 2160000 pixels is over the limit of 1000 pixels")
    }

    @Test func anArithmeticCodedJPEGIsDecodedUnderItsByteLimitAndRefusedOverIt() throws {
        let data = JPEGFixtures.arithmetic
        let media = try MediaSniffer.classify(data, maxPixels: 1 << 20, maxDecodeBytes: Int64(data.count), decodeSlots: Self.decodeSlots)
        #expect(media.width == 96 && media.height == 32)
        let over = try #require(throws: MediaError.self) {
            try MediaSniffer.classify(data, maxPixels: 1 << 20, maxDecodeBytes: Int64(data.count - 1), decodeSlots: Self.decodeSlots)
        }
        #expect(over.message.hasPrefix("data: arithmetic-coded JPEG of \(data.count) bytes is over the limit of \(data.count - 1) bytes"))
    }
}
