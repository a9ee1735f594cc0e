import Foundation
import JPEG
import Testing
import TestSupport

/// When a photo was taken: DateTimeOriginal (0x9003) and OffsetTimeOriginal (0x9011) of the Exif
/// IFD, and the ISO 8601 form the image service records (`EXIF.takenAt`).
@Suite("EXIF dates")
struct EXIFDateTests {
    /// SOI + an APP1 whose Exif IFD holds `entries` (a JPEG's head, all the readers need).
    static func head(_ entries: [EXIFSamples.Entry], littleEndian: Bool = true) -> [UInt8] {
        [0xFF, 0xD8] + EXIFSamples.app1(entries, littleEndian: littleEndian)
    }

    /// `takenAt` when the block holds `date` and, if given, `offset`.
    static func takenAt(_ date: String, offset: String? = nil, littleEndian: Bool = true) -> String? {
        let entries = [EXIFSamples.dateTimeOriginal(date)] + (offset.map { [EXIFSamples.offsetTimeOriginal($0)] } ?? [])
        return EXIF.takenAt(in: head(entries, littleEndian: littleEndian))
    }

    @Test("a date and its offset are read in both byte orders and give ISO 8601 local time with the offset")
    func dateAndOffsetInBothByteOrders() throws {
        for littleEndian in [true, false] {
            let jpeg = Self.head(
                [EXIFSamples.dateTimeOriginal("2024:05:07 09:33:04"), EXIFSamples.offsetTimeOriginal("+08:00")], littleEndian: littleEndian)
            #expect(EXIF.dateTimeOriginal(in: jpeg) == "2024:05:07 09:33:04")
            #expect(EXIF.offsetTimeOriginal(in: jpeg) == "+08:00")
            #expect(EXIF.takenAt(in: jpeg) == "2024-05-07T09:33:04+08:00")
            #expect(jpeg.withUnsafeBytes { EXIF.takenAt(in: $0) } == "2024-05-07T09:33:04+08:00")
            // Without the offset tag: local time alone.
            #expect(Self.takenAt("2031:01:02 03:04:05", littleEndian: littleEndian) == "2031-01-02T03:04:05")
            #expect(Self.takenAt("2031:01:02 03:04:05", offset: "-05:30", littleEndian: littleEndian) == "2031-01-02T03:04:05-05:30")
        }
        // On a real, decodable JPEG, with the offset before the date in the IFD.
        let photo = EXIFSamples.inserting(
            EXIFSamples.app1([EXIFSamples.offsetTimeOriginal("-07:00"), EXIFSamples.dateTimeOriginal("2019:12:31 23:59:59")]),
            into: try JPEG.encode(TestImages.gradient(width: 16, height: 8)))
        #expect(EXIF.takenAt(in: photo) == "2019-12-31T23:59:59-07:00")
        #expect(try JPEG.decode(photo).width == 16)
    }

    @Test("real files: a phone's EXIF with its offset, one with a date alone, and ones without a date")
    func realFiles() throws {
        #expect(EXIF.takenAt(in: try Fixtures.pillowImage("ultrahdr.jpg")) == "2024-05-07T09:33:04+08:00")
        #expect(EXIF.offsetTimeOriginal(in: try Fixtures.pillowImage("ultrahdr.jpg")) == "+08:00")
        #expect(EXIF.takenAt(in: try Fixtures.pillowImage("exif_gps.jpg")) == "2099-09-29T10:10:10")
        // EXIF without DateTimeOriginal (IFD0's DateTime is when the file was changed, not taken).
        for name in ["pil_sample_rgb.jpg", "jpeg_ff00_header.jpg", "hopper.jpg", "hopper_bad_exif.jpg"] {
            #expect(EXIF.takenAt(in: try Fixtures.pillowImage(name)) == nil, "\(name)")
        }
        #expect(EXIF.takenAt(in: try Fixtures.orientationPhoto("Landscape_6.jpg")) == nil)
        #expect(EXIF.takenAt(in: try JPEG.encode(TestImages.gradient(width: 8, height: 8))) == nil)
    }

    @Test("the zeros cameras write for unknown, and dates or times out of range, are no date")
    func zerosAndOutOfRange() {
        for date in [
            "0000:00:00 00:00:00", "2024:00:10 10:00:00", "2024:13:10 10:00:00", "2024:05:00 10:00:00", "2024:05:32 10:00:00",
            "2024:05:07 24:00:00", "2024:05:07 09:60:00", "2024:05:07 09:33:60", "0000:05:07 09:33:04",
            "    :  :     :  :  ", "2024-05-07 09:33:04", "2024:05:07T09:33:04", "2024:05:07 9:33:04 ", "２０２４:05:07 09:33",
        ] {
            #expect(Self.takenAt(date, offset: "+01:00") == nil, "\(date)")
            #expect(EXIF.dateTimeOriginal(in: Self.head([EXIFSamples.dateTimeOriginal(date)])) == nil, "\(date)")
        }
        #expect(Self.takenAt("0001:01:01 00:00:00") == "0001-01-01T00:00:00")
        #expect(Self.takenAt("9999:12:31 23:59:59") == "9999-12-31T23:59:59")
    }

    @Test("an offset not of the form +HH:MM / -HH:MM, or out of range, is left out and the date kept")
    func malformedOffsets() {
        let date = "2024:05:07 09:33:04"
        for offset in ["+00:00", "-12:00", "+14:00", "+05:45", "-03:30"] {
            #expect(Self.takenAt(date, offset: offset) == "2024-05-07T09:33:04" + offset, "\(offset)")
        }
        for offset in ["+15:00", "+08:60", "08:00", "+8:00", " 08:00", "Z", "      ", "+08-00", "+0800", "±08:00", "+08:0"] {
            #expect(Self.takenAt(date, offset: offset) == "2024-05-07T09:33:04", "\(offset)")
            #expect(EXIF.offsetTimeOriginal(in: Self.head([EXIFSamples.offsetTimeOriginal(offset)])) == nil, "\(offset)")
        }
        // Six characters and no NUL is whole; text after them is not an offset.
        let bare = EXIFSamples.Entry(tag: 0x9011, count: 6, value: Array("+02:00".utf8))
        #expect(EXIF.offsetTimeOriginal(in: Self.head([bare])) == "+02:00")
        let trailing = EXIFSamples.Entry(tag: 0x9011, count: 8, value: Array("+02:00x".utf8) + [0])
        #expect(EXIF.offsetTimeOriginal(in: Self.head([trailing])) == nil)
        // Not ASCII, or counted short.
        #expect(EXIF.offsetTimeOriginal(in: Self.head([EXIFSamples.Entry(tag: 0x9011, type: 7, count: 7, value: Array("+02:00".utf8) + [0])])) == nil)
        #expect(EXIF.offsetTimeOriginal(in: Self.head([EXIFSamples.Entry(tag: 0x9011, count: 5, value: Array("+02:00".utf8) + [0])])) == nil)
        #expect(EXIF.dateTimeOriginal(in: Self.head([EXIFSamples.Entry(tag: 0x9003, type: 7, count: 20, value: Array(date.utf8) + [0])])) == nil)
        #expect(EXIF.dateTimeOriginal(in: Self.head([EXIFSamples.Entry(tag: 0x9003, count: 18, value: Array(date.utf8) + [0])])) == nil)
    }

    @Test("every truncation of the block, and offsets or counts that point outside it, give nil or the true value: never a crash")
    func truncatedAndHostileBlocks() {
        let entries = [EXIFSamples.dateTimeOriginal("2024:05:07 09:33:04"), EXIFSamples.offsetTimeOriginal("+08:00")]
        for littleEndian in [true, false] {
            let tiff = EXIFSamples.tiff(entries, littleEndian: littleEndian)
            for cut in 0...tiff.count {
                // The segment's length says what is there: the TIFF block cut short inside it.
                let value = EXIF.takenAt(in: [0xFF, 0xD8] + EXIFSamples.segment(tiff: Array(tiff.prefix(cut))))
                #expect(value == nil || value == "2024-05-07T09:33:04" || value == "2024-05-07T09:33:04+08:00", "cut at \(cut): \(value ?? "nil")")
                // The segment's length says more than the data holds.
                let short = Array(([0xFF, 0xD8] + EXIFSamples.segment(tiff: tiff)).prefix(2 + 4 + 6 + cut))
                #expect(EXIF.takenAt(in: short) == (cut == tiff.count ? "2024-05-07T09:33:04+08:00" : nil), "cut at \(cut)")
            }
        }
        let good = EXIFSamples.tiff(entries)
        func patched(_ at: Int, _ bytes: [UInt8]) -> [UInt8] {
            var tiff = good
            tiff.replaceSubrange(at..<(at + bytes.count), with: bytes)
            return [0xFF, 0xD8] + EXIFSamples.segment(tiff: tiff)
        }
        // IFD0 at 8; its entry's value (the Exif IFD's offset) at 18; the Exif IFD at 26, its
        // entries at 28 (date) and 40 (offset), each entry's count at +4 and value at +8.
        #expect(EXIF.takenAt(in: patched(4, [0xFF, 0xFF, 0xFF, 0x7F])) == nil, "IFD0 past the end")
        #expect(EXIF.takenAt(in: patched(18, [0xFF, 0xFF, 0xFF, 0xFF])) == nil, "the Exif IFD past the end")
        #expect(EXIF.takenAt(in: patched(18, [8, 0, 0, 0])) == nil, "the Exif IFD is IFD0")
        #expect(EXIF.takenAt(in: patched(26, [0xFF, 0xFF])) == nil, "65535 entries, most past the end")
        #expect(EXIF.takenAt(in: patched(28 + 8, [0xFF, 0xFF, 0xFF, 0xFF])) == nil, "the date's value past the end")
        #expect(EXIF.takenAt(in: patched(28 + 4, [0xFF, 0xFF, 0xFF, 0xFF])) == nil, "the date's count past the end")
        #expect(EXIF.takenAt(in: patched(40 + 8, [0xFF, 0xFF, 0xFF, 0xFF])) == "2024-05-07T09:33:04", "the offset's value past the end")
        #expect(EXIF.takenAt(in: patched(40 + 4, [0xFF, 0xFF, 0xFF, 0xFF])) == "2024-05-07T09:33:04", "the offset's count past the end")
    }

    @Test("random bytes in the Exif IFD and its values never crash, and a date found is always of the ISO form")
    func randomBlocks() throws {
        var random = SplitMix64(seed: 0xDA7E)
        let good = EXIFSamples.tiff([EXIFSamples.dateTimeOriginal("2024:05:07 09:33:04"), EXIFSamples.offsetTimeOriginal("+08:00")])
        var found = 0
        for round in 0..<3000 {
            var tiff = good
            // A few random bytes anywhere after the header, or a random tail.
            if round % 3 == 0 {
                tiff = Array(tiff.prefix(26)) + (0..<Int.random(in: 0...120, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    tiff[Int.random(in: 8..<tiff.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            let jpeg = [0xFF, 0xD8] + EXIFSamples.segment(tiff: tiff)
            guard let value = EXIF.takenAt(in: jpeg) else { continue }
            found += 1
            #expect(Self.isISO(value), "\(value)")
            // The date as DateTimeOriginal reads it, its separators those of ISO 8601.
            var iso = Array(try #require(EXIF.dateTimeOriginal(in: jpeg)).utf8)
            iso[4] = UInt8(ascii: "-")
            iso[7] = UInt8(ascii: "-")
            iso[10] = UInt8(ascii: "T")
            #expect(String(value.prefix(19)) == String(decoding: iso, as: UTF8.self))
        }
        #expect(found > 0 && found < 3000)
    }

    /// "YYYY-MM-DDTHH:MM:SS", then nothing or "+HH:MM" / "-HH:MM".
    static func isISO(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 19 || bytes.count == 25 else { return false }
        let pattern = Array("dddd-dd-ddTdd:dd:dd".utf8) + (bytes.count == 25 ? Array("sdd:dd".utf8) : [])
        return zip(bytes, pattern).allSatisfy { byte, expected in
            switch expected {
            case UInt8(ascii: "d"): (48...57).contains(byte)
            case UInt8(ascii: "s"): byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            default: byte == expected
            }
        }
    }
}
