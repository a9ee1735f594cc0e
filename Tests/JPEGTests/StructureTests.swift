import Foundation
@testable import JPEG
import Testing
import TestSupport

/// `JPEG.validate` and the header walk: what the structure shows without a decode.
@Suite("Structure")
struct StructureTests {
    static func baseline(_ subsampling: Subsampling = .s420, width: Int = 64, height: Int = 48) throws -> [UInt8] {
        try JPEG.encode(TestImages.gradient(width: width, height: height), quality: 90, subsampling: subsampling)
    }

    /// The refusal of `validate`, or nil when it passed.
    static func refusal(_ data: [UInt8]) -> JPEGError? {
        do {
            _ = try JPEG.validate(data)
            return nil
        } catch {
            return error
        }
    }

    @Test("validate accepts what TurboJPEG and cjpeg write: every subsampling, grey, progressive, restart markers, CMYK, the photos")
    func validJPEGsPass() throws {
        var samples: [(String, [UInt8], scans: Int)] = []
        for subsampling in [Subsampling.s444, .s422, .s420, .gray] {
            samples.append(("\(subsampling)", try Self.baseline(subsampling, width: 61, height: 37), 1))
        }
        samples.append(("progressive", try JPEG.encodeProgressive(TestImages.gradient(width: 80, height: 50)), 10))
        samples.append(("restart markers", JPEGFixtures.restartEveryMCU, 1))
        samples.append(("progressive with restart markers", JPEGFixtures.progressiveWithRestarts, 10))
        let cmyk = [UInt8](repeating: 128, count: 24 * 16 * 4)
        samples.append(("CMYK", try JPEG.encodeCMYK(cmyk, width: 24, height: 16), 1))
        for name in ["Landscape_1.jpg", "Portrait_6.jpg", "Landscape_0.jpg"] {
            samples.append((name, try TestImages.photo(name), 1))
        }
        for (name, data, scans) in samples {
            let validation = try JPEG.validate(data)
            #expect(validation.scans == scans, "\(name)")
            #expect(validation.end == data.count, "\(name)")
            #expect(validation.entropyDataChecked, "\(name)")
            #expect(validation.header == (try JPEG.header(of: data)), "\(name)")
            _ = try JPEG.decode(data)  // and the decoder agrees
        }
    }

    @Test("arithmetic-coded JPEGs pass the structure but say their entropy-coded data was not bounded")
    func arithmeticIsNotBounded() throws {
        for data in [JPEGFixtures.arithmetic, JPEGFixtures.arithmeticProgressive] {
            let validation = try JPEG.validate(data)
            #expect(!validation.entropyDataChecked)
            #expect(validation.header.width == 96 && validation.header.height == 32)
            #expect(try JPEG.decode(data).width == 96)
        }
    }

    @Test("the frame header is found after 8 MB of APP1 segments, after 60,000 tiny segments, and right after a full 64 KB segment")
    func frameHeaderAfterLargeMetadata() throws {
        let photo = try TestImages.photo("Landscape_6.jpg")
        let small = try Self.baseline()
        let cases: [(String, [UInt8])] = [
            ("8 MB of APP1", JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 8 << 20), beforeFrameOf: photo)),
            ("60,000 COM", JPEGSplice.inserting(JPEGSplice.tinySegments(60_000), beforeFrameOf: small)),
            ("64 KB APP1 ending at the SOF", JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 200_000, lastFull: true), beforeFrameOf: small)),
        ]
        for (name, data) in cases {
            let validation = try JPEG.validate(data)
            let original = name.hasPrefix("8 MB") ? photo : small
            #expect(validation.header == (try JPEG.header(of: original)), "\(name)")
            #expect(validation.end == data.count, "\(name)")
            #expect(try JPEG.decode(data, targetSize: (8, 8)).width > 0, "\(name)")
        }
        // The EXIF orientation of the photo (in its APP1 before the inserted ones) is still read.
        #expect(try JPEG.validate(cases[0].1).header.orientation == 6)
    }

    @Test("a JPEG of more marker segments than DecodeOptions.maxSegments is refused at the first one over, for validate, header and decode")
    func segmentLimit() throws {
        let small = try Self.baseline()
        let frame = JPEGSplice.frameOffset(in: small)
        // The segments before the frame (APP0, DQT…; SOI is not one) count too.
        var before = 0, index = 2
        while index < frame {
            before += 1
            index += 2 + (Int(small[index + 2]) << 8 | Int(small[index + 3]))
        }
        let data = JPEGSplice.inserting(JPEGSplice.tinySegments(65_536), beforeFrameOf: small)
        let over = frame + 4 * (65_536 - before)
        let message = "the JPEG has more than 65536 marker segments (the 65537th is at offset \(over)); real files have a few dozen"
        #expect(Self.refusal(data)?.message == message)
        let header = try #require(throws: JPEGError.self) { try JPEG.header(of: data) }
        #expect(header.message == message && header.kind == .unsupported("more than 65536 marker segments"))
        let decode = try #require(throws: JPEGError.self) { try JPEG.decode(data) }
        #expect(decode.message == message)
        #expect(try JPEG.validate(data, options: DecodeOptions(maxSegments: 70_000)).end == data.count)
    }

    @Test("segments that run past the end are refused as truncated, naming the segment, its offset and what remains")
    func segmentsPastTheEnd() throws {
        let small = try Self.baseline()
        let big = JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 8 << 20), beforeFrameOf: small)
        let frame = JPEGSplice.frameOffset(in: small)
        // Cut 1000 bytes into the 10th inserted segment.
        let tenth = frame + 9 * JPEGSplice.largestSegment
        let cut = try #require(Self.refusal(Array(big.prefix(tenth + 1000))))
        #expect(cut.kind == .truncated)
        #expect(cut.message == "the APP1 segment at offset \(tenth) declares 65535 bytes, but only 998 remain")

        let tiny = JPEGSplice.inserting(JPEGSplice.tinySegments(5000), beforeFrameOf: small)
        let inTiny = try #require(Self.refusal(Array(tiny.prefix(frame + 4 * 4321 + 3))))
        #expect(inTiny.kind == .truncated)
        #expect(inTiny.message == "the COM segment at offset \(frame + 4 * 4321) is cut off before its length")

        let full = JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 200_000, lastFull: true), beforeFrameOf: small)
        let atFrame = try #require(Self.refusal(Array(full.prefix(frame + 200_000))))
        #expect(atFrame.kind == .truncated)
        #expect(atFrame.message == "no frame header (SOF) before the end of the data at offset \(frame + 200_000)")
        // The header alone is refused the same way.
        #expect(throws: JPEGError.self) { try JPEG.header(of: Array(full.prefix(frame + 200_000 - 5))) }
    }

    @Test("a valid header followed by filler and FF D9 is refused: too much data for its blocks, too little, or only fill bytes")
    func headerAndFiller() throws {
        let small = try Self.baseline()
        let header = Array(small.prefix(JPEGSplice.scanDataOffset(in: small)))
        let sos = JPEGSplice.offset(of: [0xDA], in: small)
        // 64×48 at 4:2:0: 12 MCUs of 6 blocks.
        let long = header + (0..<1_000_000).map { UInt8($0 % 255) } + [0xFF, 0xD9]
        let tooLong = try #require(Self.refusal(long))
        #expect(tooLong.kind == .corrupt)
        #expect(tooLong.message == "scan 1 (SOS at offset \(sos)) has 1000000 bytes of entropy-coded data; its 72 blocks can hold at most 18433")
        let tooShort = try #require(Self.refusal(header + [1, 2, 3, 0xFF, 0xD9]))
        #expect(tooShort.kind == .truncated)
        #expect(tooShort.message == "scan 1 (SOS at offset \(sos)) has 3 bytes of entropy-coded data; its 72 blocks need at least 18")
        #expect(Self.refusal(header + [UInt8](repeating: 0xFF, count: 5000) + [0xD9])?.kind == .truncated)
        // Without its EOI the data ends inside the scan.
        let noEOI = try #require(Self.refusal(Array(small.dropLast(2))))
        #expect(noEOI.kind == .truncated)
        #expect(noEOI.message == "the data ends at offset \(small.count - 2) inside the entropy-coded data of scan 1, before EOI")
    }

    @Test("bytes after EOI are not part of the image: validate stops there and reports where it ended")
    func trailerAfterEOI() throws {
        let small = try Self.baseline()
        let validation = try JPEG.validate(small + (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(validation.end == small.count)
    }

    @Test("restart markers out of sequence or missing are refused with the marker and its offset")
    func restartMarkers() throws {
        let data = JPEGFixtures.restartEveryMCU
        let rst = try #require((2..<data.count - 1).first { data[$0] == 0xFF && data[$0 + 1] == 0xD0 })
        var swapped = data
        swapped[rst + 1] = 0xD1
        let outOfOrder = try #require(Self.refusal(swapped))
        #expect(outOfOrder.message.hasSuffix("has RST1 at offset \(rst) where RST0 belongs"))
        // Without the last one (RST2, the 11th), the ten before it are in order but too few.
        let last = try #require((2..<data.count - 1).last { data[$0] == 0xFF && (0xD0...0xD7).contains(data[$0 + 1]) })
        #expect(data[last + 1] == 0xD2)
        var missing = data
        missing.removeSubrange(last..<last + 2)
        let short = try #require(Self.refusal(missing))
        #expect(short.message.hasSuffix("has 10 restart markers; its 12 MCUs in intervals of 1 need 11"))
        // The decoder refuses both as well.
        #expect(throws: JPEGError.self) { try JPEG.decode(swapped) }
        #expect(throws: JPEGError.self) { try JPEG.decode(missing) }
    }

    @Test("a progressive file whose first (DC) scan is removed is refused: its AC scans come before any DC")
    func progressionOutOfOrder() throws {
        let data = try JPEG.encodeProgressive(TestImages.gradient(width: 80, height: 50))
        let first = JPEGSplice.offset(of: [0xDA], in: data)
        // The first scan runs to the next marker that is not stuffing or a restart.
        var end = JPEGSplice.scanDataOffset(in: data)
        while !(data[end] == 0xFF && data[end + 1] != 0 && !(0xD0...0xD7).contains(data[end + 1])) { end += 1 }
        let broken = Array(data[..<first]) + Array(data[end...])
        let error = try #require(Self.refusal(broken))
        #expect(error.kind == .corrupt)
        #expect(error.message.contains("before its DC scan") || error.message.contains("refines coefficient"), "\(error.message)")
        #expect(throws: JPEGError.self) { try JPEG.decode(broken) }
    }

    @Test("markers out of place are refused: a second SOI or SOF, a scan before the frame, a reserved marker")
    func markersOutOfPlace() throws {
        let small = try Self.baseline()
        let frame = JPEGSplice.frameOffset(in: small)
        let sof = Array(small[frame..<(frame + 2 + (Int(small[frame + 2]) << 8 | Int(small[frame + 3])))])
        let cases: [([UInt8], String)] = [
            (Array(small[..<frame]) + [0xFF, 0xD8] + Array(small[frame...]), "a second SOI at offset \(frame)"),
            (Array(small[..<frame]) + sof + Array(small[frame...]),
             "a second frame header (SOF0) at offset \(frame + sof.count); the first is at offset \(frame)"),
            (Array(small[..<frame]) + [0xFF, 0x45, 0x00, 0x02] + Array(small[frame...]), "marker 0x45 at offset \(frame) is not a marker the decoder accepts"),
        ]
        for (data, message) in cases {
            #expect(Self.refusal(data)?.message == message)
        }
        let sos = JPEGSplice.offset(of: [0xDA], in: small)
        let early = Array(small[..<frame]) + Array(small[sos...])
        #expect(Self.refusal(early)?.message == "the SOS at offset \(frame) comes before any frame header (SOF)")
    }

    @Test("frame headers the decoder cannot read are refused before anything else: lossless, 12-bit, height 0 (DNL)")
    func unsupportedFrames() throws {
        let small = try Self.baseline()
        let frame = JPEGSplice.frameOffset(in: small)
        var lossless = small
        lossless[frame + 1] = 0xC3
        #expect(Self.refusal(lossless)?.message.hasPrefix("the SOF3 frame at offset \(frame) is lossless JPEG, which is not supported") == true)
        var twelveBit = small
        twelveBit[frame + 4] = 12
        #expect(Self.refusal(twelveBit)?.message == "the SOF0 frame at offset \(frame) has 12-bit samples; only 8-bit JPEGs are supported")
        var dnl = small
        dnl[frame + 5] = 0; dnl[frame + 6] = 0
        #expect(Self.refusal(dnl)?.message
            == "the SOF0 frame at offset \(frame) declares a height of 0 (to follow in a DNL marker), which is not supported")
    }
}
