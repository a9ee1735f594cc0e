import Foundation
@testable import JPEG
import Testing
import TestSupport

/// Extraneous bytes between marker segments: skipped as libjpeg skips them, counted, bounded;
/// and what cannot be skipped because it is inside entropy-coded data.
@Suite("Extraneous bytes")
struct ExtraneousBytesTests {
    /// The refusal of `validate`, or nil when it passed.
    static func refusal(_ data: [UInt8], options: DecodeOptions = .init()) -> JPEGError? {
        do {
            _ = try JPEG.validate(data, options: options)
            return nil
        } catch {
            return error
        }
    }

    /// The marker segments outside entropy-coded data: marker and offset, SOI to EOI, for a
    /// JPEG this test made (no extraneous bytes).
    static func segments(of data: [UInt8]) -> [(marker: UInt8, offset: Int)] {
        var found: [(UInt8, Int)] = [], index = 2
        while index + 1 < data.count {
            precondition(data[index] == 0xFF, "not at a marker at offset \(index)")
            let marker = data[index + 1]
            found.append((marker, index))
            if marker == 0xD9 { break }
            index += 2 + (Int(data[index + 2]) << 8 | Int(data[index + 3]))
            guard marker == 0xDA else { continue }
            // Past the scan's data: stuffing and restart markers belong to it.
            while !(data[index] == 0xFF && data[index + 1] != 0 && !(0xD0...0xD7).contains(data[index + 1])) { index += 1 }
        }
        return found
    }

    @Test("Pillow's files with extraneous bytes in their headers validate, count them as djpeg does, and decode the pixels libjpeg decodes")
    func realFilesValidateAndDecode() throws {
        for file in QuirkyJPEGs.files {
            let data = try Fixtures.pillowImage(file.name)
            let validation = try JPEG.validate(data)
            #expect(validation.extraneousBytes == file.run.count, "\(file.name)")
            #expect(validation.extraneousRuns == 1, "\(file.name)")
            #expect(validation.firstExtraneousOffset == file.run.lowerBound, "\(file.name)")
            #expect(validation.end == data.count, "\(file.name)")
            #expect(validation.header.width == file.width && validation.header.height == file.height, "\(file.name)")
            // Without the run, TurboJPEG (stopping at any warning) reads the file as it is.
            let clean = QuirkyJPEGs.removing(file.run, from: data)
            #expect(try JPEG.validate(clean).extraneousBytes == 0, "\(file.name)")
            #expect(try JPEG.header(of: data) == (try JPEG.header(of: clean)), "\(file.name)")
            let decoded = try JPEG.decode(data), expected = try JPEG.decode(clean)
            #expect(decoded.width == file.width && decoded.height == file.height, "\(file.name)")
            #expect(decoded.pixels == expected.pixels, "\(file.name)")
        }
    }

    @Test("extraneous bytes anywhere between segments are skipped and counted: text, FF 00, FF FF 00 and fill, several runs, between the scans of a progressive file")
    func syntheticRuns() throws {
        let small = try JPEG.encode(TestImages.gradient(width: 64, height: 48), quality: 90)
        let frame = JPEGSplice.frameOffset(in: small)
        let dqt = JPEGSplice.offset(of: [0xDB], in: small)
        func inserting(_ bytes: [UInt8], at offset: Int, in data: [UInt8]) -> [UInt8] {
            Array(data[..<offset]) + bytes + Array(data[offset...])
        }
        let progressive = try JPEG.encodeProgressive(TestImages.gradient(width: 80, height: 50))
        let scans = Self.segments(of: progressive).filter { $0.marker == 0xDA }.map(\.offset)
        // The second scan follows a DHT segment, not the first scan's data.
        let beforeSecond = try #require(Self.segments(of: progressive).last { $0.offset < scans[1] })
        #expect(beforeSecond.marker == 0xC4)
        let cases: [(String, original: [UInt8], data: [UInt8], bytes: Int, runs: Int, first: Int)] = [
            ("text", small, inserting(Array("hello".utf8), at: frame, in: small), 5, 1, frame),
            ("FF 00 00 02", small, inserting([0xFF, 0x00, 0x00, 0x02], at: frame, in: small), 4, 1, frame),
            ("00 11", small, inserting([0x00, 0x11], at: frame, in: small), 2, 1, frame),
            // FF FF 00 is no marker, and the FF FF before SOF0 is fill, which is no extraneous
            // byte. (libjpeg's warning would say 4: it leaves the second FF of FF FF 00 out.)
            ("FF FF 00, fill", small, inserting([0xFF, 0xFF, 0x00, 0x61, 0x62, 0xFF, 0xFF], at: frame, in: small), 5, 1, frame),
            ("two runs", small, inserting([1, 2, 3], at: frame, in: inserting([9], at: dqt, in: small)), 4, 2, dqt),
            ("between scans", progressive, inserting([0x00, 0x20, 0x7F], at: scans[1], in: progressive), 3, 1, scans[1]),
        ]
        for (name, original, data, bytes, runs, first) in cases {
            let validation = try JPEG.validate(data)
            #expect(validation.extraneousBytes == bytes, "\(name)")
            #expect(validation.extraneousRuns == runs, "\(name)")
            #expect(validation.firstExtraneousOffset == first, "\(name)")
            #expect(validation.end == data.count, "\(name)")
            #expect(validation.header == (try JPEG.header(of: original)), "\(name)")
            #expect(try JPEG.decode(data).pixels == (try JPEG.decode(original)).pixels, "\(name)")
        }
    }

    @Test("more than DecodeOptions.maxExtraneousBytes in all is refused as corrupt, at the run that goes over; stray bytes to the end of the data are truncated")
    func boundedInAll() throws {
        let small = try JPEG.encode(TestImages.gradient(width: 64, height: 48), quality: 90)
        let frame = JPEGSplice.frameOffset(in: small), dqt = JPEGSplice.offset(of: [0xDB], in: small)
        let filler = (0..<1_000_000).map { UInt8($0 % 255) }
        // A header without its scan, a megabyte of filler and an EOI: not a JPEG's segments.
        let noScan = Array(small[..<JPEGSplice.offset(of: [0xDA], in: small)]) + filler + [0xFF, 0xD9]
        let sos = JPEGSplice.offset(of: [0xDA], in: small)
        let suffix = "; a JPEG's segments follow one another, with at most a few stray bytes between them"
        #expect(Self.refusal(noScan)?.message
            == "more than 65536 extraneous bytes between marker segments: no marker within 65536 bytes of offset \(sos)" + suffix)
        #expect(Self.refusal(noScan)?.kind == .corrupt)

        // 65,536 in all pass; one more is refused where it is.
        let atLimit = Array(small[..<dqt]) + [UInt8](repeating: 0, count: 30_000) + Array(small[dqt..<frame])
            + [UInt8](repeating: 0x20, count: 35_536) + Array(small[frame...])
        #expect(try JPEG.validate(atLimit).extraneousBytes == 65_536)
        #expect(try JPEG.decode(atLimit).pixels == (try JPEG.decode(small)).pixels)
        let over = Array(small[..<dqt]) + [UInt8](repeating: 0, count: 30_000) + Array(small[dqt..<frame])
            + [UInt8](repeating: 0x20, count: 35_537) + Array(small[frame...])
        let overFrame = frame + 30_000
        #expect(Self.refusal(over)?.message
            == "more than 65536 extraneous bytes between marker segments: no marker within 35536 bytes of offset \(overFrame) (after 30000 skipped before it)" + suffix)
        #expect(throws: JPEGError.self) { try JPEG.header(of: over) }
        #expect(throws: JPEGError.self) { try JPEG.decode(over) }

        // With a limit of 0, any is refused (the strictness this walk had before).
        let two = Array(small[..<frame]) + [0x00, 0x11] + Array(small[frame...])
        #expect(Self.refusal(two, options: DecodeOptions(maxExtraneousBytes: 0))?.message
            == "more than 0 extraneous bytes between marker segments: no marker within 0 bytes of offset \(frame)" + suffix)

        // Stray bytes up to the end: the rest of the file is missing.
        let cut = Array(small[..<frame]) + Array("hello".utf8)
        let truncated = try #require(Self.refusal(cut))
        #expect(truncated.kind == .truncated)
        #expect(truncated.message == "the data ends at offset \(frame + 5) in 5 extraneous bytes from offset \(frame), before any marker")
        let endsInFill = try #require(Self.refusal(Array(small[..<frame]) + [0x41, 0xFF, 0xFF]))
        #expect(endsInFill.message == "the data ends at offset \(frame + 3) inside a marker")
    }

    @Test("bytes left over before a restart marker are the scan's data to the walk (it cannot tell them apart without decoding), and the decoder refuses them")
    func insideEntropyCodedData() throws {
        let data = JPEGFixtures.restartEveryMCU
        let rsts = (2..<data.count - 1).filter { data[$0] == 0xFF && (0xD0...0xD7).contains(data[$0 + 1]) }
        let rst4 = rsts[4]
        #expect(data[rst4 + 1] == 0xD4)
        // More than the decoder's bit buffer reads ahead (a few bytes, which it drops silently).
        let junk = Array(data[..<rst4]) + (1...40).map { UInt8($0) } + Array(data[rst4...])
        let validation = try JPEG.validate(junk)
        #expect(validation.extraneousBytes == 0 && validation.scans == 1 && validation.end == junk.count)
        let error = try #require(throws: JPEGError.self) { try JPEG.decode(junk) }
        #expect(error.kind == .corrupt)
        #expect(error.message == "Corrupt JPEG data: 40 extraneous bytes before marker 0xd4")
    }
}
