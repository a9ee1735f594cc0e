import Foundation
@testable import JPEG
import Testing

/// Poison originals: each refused with a `JPEGError` that says what is wrong, found by the
/// header or the structure walk, which run before the decode allocates its pixels.
@Suite("Thumbnailer limits")
struct ThumbnailerLimitsTests {
    static let sizes: [Thumbnailer.Target] = [.init(longestEdge: 64), .init(longestEdge: 1024)]

    /// The refusal of the thumbnailer.
    static func refusal(_ jpeg: [UInt8], options: DecodeOptions = .init()) throws -> JPEGError {
        try #require(throws: JPEGError.self) { try Thumbnailer(options: options).thumbnails(of: jpeg, sizes: sizes) }
    }

    /// A 16×16 progressive JPEG with `extra` more scans before its EOI: first AC scans of Y
    /// (Ss 1, Se 63, Ah 0, Al 0) that code nothing, which libjpeg accepts once the script has
    /// coded every bit, as a scan bomb repeats them to make the decoder pass over the image again and again.
    static func scanBomb(extra: Int) throws -> [UInt8] {
        let jpeg = try JPEG.encodeProgressive(TestImages.gradient(width: 16, height: 16), quality: 90)
        #expect(Array(jpeg.suffix(2)) == [0xFF, 0xD9])
        // AC table 1 with one code, "0": the EOB of one block, so the 4 blocks of Y are 4 bits.
        let table: [UInt8] = [0xFF, 0xC4, 0x00, 0x14, 0x11, 1] + [UInt8](repeating: 0, count: 15) + [0x00]
        let scan: [UInt8] = [0xFF, 0xDA, 0x00, 0x08, 1, 1, 0x01, 1, 63, 0x00, 0x0F]
        return Array(jpeg.dropLast(2)) + table + Array(scan.repeated(extra)) + [0xFF, 0xD9]
    }

    @Test("a progressive-scan bomb is refused at scan 501, by the walk and by TurboJPEG's TJFLAG_LIMITSCANS; without the limit it is a picture")
    func scanBombRefused() throws {
        let bomb = try Self.scanBomb(extra: 600)
        let scans = try JPEG.validate(bomb, options: DecodeOptions(limitScans: false)).scans
        #expect(scans > 600)
        let error = try Self.refusal(bomb)
        #expect(error.kind == .unsupported("Progressive JPEG image has more than 500 scans"))
        #expect(error.message == "the JPEG has more than 500 scans (the decoder's limit against progressive-scan CPU exhaustion)")
        // The decoder's own limit, reached when the walk's refusal is ignored (as JPEG.decode does).
        let decoder = try #require(throws: JPEGError.self) { try JPEG.decode(bomb) }
        #expect(decoder.message.contains("Progressive JPEG image has more than 500 scans"), "\(decoder)")
        // The extra scans code nothing: without the limit the picture is the original's.
        let unlimited = try Thumbnailer(options: DecodeOptions(limitScans: false)).thumbnails(of: bomb, sizes: Self.sizes)
        let original = try Thumbnailer().thumbnails(of: try Self.scanBomb(extra: 0), sizes: Self.sizes)
        #expect(unlimited.map(\.data) == original.map(\.data))
    }

    @Test("a header of 60000×60000 is refused as too many pixels; so is a real photo over a lower limit")
    func pixelBomb() throws {
        var jpeg = try JPEG.encode(TestImages.gradient(width: 16, height: 16), quality: 80)
        let sof = try #require(TestImages.sof0Offset(in: jpeg))
        // SOF0: FF C0, length (2), precision (1), height (2), width (2). 60000 = EA 60.
        jpeg.replaceSubrange((sof + 5)..<(sof + 9), with: [0xEA, 0x60, 0xEA, 0x60])
        // A 1/8 decode of it would be 7500×7500 RGB, 169 MB; the full size 10.8 GB.
        let error = try Self.refusal(jpeg)
        #expect(error.kind == .tooManyPixels(width: 60000, height: 60000, limit: 100_000_000))
        #expect(error.message == "60000×60000 = 3600000000 pixels exceeds the limit of 100000000")
        let photo = try Self.refusal(try TestImages.photo("Landscape_1.jpg"), options: DecodeOptions(maxPixels: 2_000_000))
        #expect(photo.message == "1800×1200 = 2160000 pixels exceeds the limit of 2000000")
    }

    @Test("a cut-off JPEG is refused as truncated by the walk (its words, not the decoder's), however large it declares itself")
    func truncated() throws {
        let photo = try TestImages.photo("Landscape_1.jpg")
        let half = try Self.refusal(Array(photo.prefix(photo.count / 2)))
        #expect(half.kind == .truncated)
        #expect(half.message == "the data ends at offset \(photo.count / 2) inside the entropy-coded data of scan 1, before EOI", "\(half)")
        // A progressive file cut off in its 10th scan (Pillow's truncated_jpeg.jpg).
        let progressive = try Self.refusal(try TestImages.pillow("truncated_jpeg.jpg"))
        #expect(progressive.kind == .truncated, "\(progressive)")
        // The header of an 80-megapixel image and a few bytes: refused before its 1/4 decode
        // (2500×2000 RGB, 15 MB for the 1024) would be allocated.
        var big = try JPEG.encode(TestImages.gradient(width: 16, height: 16), quality: 80)
        let sof = try #require(TestImages.sof0Offset(in: big))
        big.replaceSubrange((sof + 5)..<(sof + 9), with: [0x1F, 0x40, 0x27, 0x10])  // 8000 high, 10000 wide
        let bigError = try Self.refusal(big)
        #expect(bigError.kind == .truncated && bigError.message.contains("blocks need at least"), "\(bigError)")
        for length in [0, 2, 3, 100] {
            let error = try Self.refusal(Array(photo.prefix(length)))
            #expect(error.kind == (length < 3 ? .notJPEG : .truncated), "\(length): \(error)")
        }
    }

    @Test("bytes that are no JPEG, and entropy-coded data that does not decode, are refused with what is wrong")
    func notAJPEGAndDamaged() throws {
        let text = try Self.refusal(Array("GIF89a, not a JPEG".utf8))
        #expect(text.kind == .notJPEG && text.message == "data does not start with the JPEG SOI marker FF D8 FF")
        var damaged = try TestImages.photo("Landscape_1.jpg")
        let start = damaged.count / 3
        // Scrambled without making or breaking an FF: the structure holds, the codes do not.
        for i in start..<(start + 2000) where damaged[i] != 0xFF && damaged[i - 1] != 0xFF {
            let scrambled = damaged[i] ^ 0x5A
            if scrambled != 0xFF { damaged[i] = scrambled }
        }
        let error = try Self.refusal(damaged)
        #expect(error.kind == .corrupt, "\(error)")
        #expect(!error.message.isEmpty)
    }
}
