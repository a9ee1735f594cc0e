import Proto
import Testing
@testable import ImageService

@Suite struct MediaSnifferTests {
    static func ftyp(_ brand: String) -> [UInt8] {
        [0, 0, 0, 24] + Array("ftyp".utf8) + Array(brand.utf8) + [0, 0, 0, 0] + Array("isommp41".utf8) + [1, 2, 3]
    }

    @Test func containersAreRecognisedBySignature() throws {
        let cases: [([UInt8], MediaType, String)] = [
            (Self.ftyp("isom"), .movie, "video/mp4"),
            (Self.ftyp("mp42"), .movie, "video/mp4"),
            (Self.ftyp("qt  "), .movie, "video/quicktime"),
            (Self.ftyp("3gp5"), .movie, "video/3gpp"),
            (Self.ftyp("heic"), .image, "image/heic"),
            (Self.ftyp("mif1"), .image, "image/heic"),
            (Self.ftyp("avif"), .image, "image/avif"),
            ([0, 0, 0, 8] + Array("moov".utf8) + [0, 0], .movie, "video/quicktime"),
            ([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x82, 0x84] + Array("webm".utf8), .movie, "video/webm"),
            ([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x82, 0x88] + Array("matroska".utf8), .movie, "video/x-matroska"),
            (Array("RIFF".utf8) + [0, 0, 0, 0] + Array("AVI LIST".utf8), .movie, "video/x-msvideo"),
        ]
        for (data, mediaType, contentType) in cases {
            let media = try MediaSniffer.classify(data, maxPixels: 1000)
            #expect(media.mediaType == mediaType && media.contentType == contentType, "\(contentType)")
        }
    }

    @Test func unknownAndWAVAreRefused() {
        for data in [Array("RIFF\0\0\0\0WAVEfmt ".utf8), Array("GIF89a....".utf8), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]] {
            #expect(throws: ImageStoreError.self) { try MediaSniffer.classify(data, maxPixels: 1000) }
        }
    }
}
