import Foundation
import JPEG
import Testing
import TestSupport

@Suite("EXIF")
struct EXIFTests {
    /// SOI + APP1 Exif with one IFD0 entry, Orientation = `value`, in the given byte order.
    static func exifJPEG(orientation value: UInt16, littleEndian: Bool, type: UInt16 = 3) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { littleEndian ? u16(UInt16(v & 0xFFFF)) + u16(UInt16(v >> 16)) : u16(UInt16(v >> 16)) + u16(UInt16(v & 0xFFFF)) }
        var tiff: [UInt8] = littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]
        tiff += u16(42) + u32(8)  // magic, IFD0 right after the header
        tiff += u16(2)  // two entries: a dummy, then Orientation
        tiff += u16(0x010F) + u16(2) + u32(4) + [0x41, 0x43, 0x4D, 0]  // Make = "ACM"
        tiff += u16(0x0112) + u16(type) + u32(1) + (type == 3 ? u16(value) + [0, 0] : u32(UInt32(value)))
        tiff += u32(0)  // no next IFD
        let payload = Array("Exif\0\0".utf8) + tiff
        let length = payload.count + 2
        return [0xFF, 0xD8, 0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// A real, decodable JPEG with the crafted APP1 inserted after SOI.
    static func photoWithEXIF(orientation: UInt16, littleEndian: Bool) throws -> [UInt8] {
        let plain = try JPEG.encode(TestImages.gradient(width: 16, height: 8))
        return exifJPEG(orientation: orientation, littleEndian: littleEndian) + plain.dropFirst(2)
    }

    @Test("orientation is read in both Intel (II) and Motorola (MM) byte order, SHORT or LONG")
    func bothByteOrders() throws {
        for littleEndian in [true, false] {
            for value in UInt16(1)...8 {
                #expect(EXIF.orientation(in: Self.exifJPEG(orientation: value, littleEndian: littleEndian)) == Int(value))
            }
            #expect(EXIF.orientation(in: Self.exifJPEG(orientation: 6, littleEndian: littleEndian, type: 4)) == 6)
        }
        let header = try JPEG.header(of: Self.photoWithEXIF(orientation: 8, littleEndian: true))
        #expect(header.orientation == 8)
        #expect(header.orientedSize == (width: 8, height: 16))
    }

    @Test("an out-of-range orientation value is nil, and the header falls back to 1")
    func outOfRange() throws {
        for value: UInt16 in [0, 9, 0xFFFF] {
            #expect(EXIF.orientation(in: Self.exifJPEG(orientation: value, littleEndian: false)) == nil)
        }
        #expect(try JPEG.header(of: Self.photoWithEXIF(orientation: 42, littleEndian: false)).orientation == 1)
    }

    @Test("every truncation of a real APP1 block gives nil or the true value, never a crash or a wrong value")
    func truncatedAPP1() throws {
        let photo = try TestImages.photo("Landscape_6.jpg")
        for length in 0...200 {
            let value = EXIF.orientation(in: Array(photo.prefix(length)))
            #expect(value == nil || value == 6, "prefix \(length) gave \(String(describing: value))")
        }
        // Keep the APP1 length field but cut the TIFF data inside it short.
        let crafted = Self.exifJPEG(orientation: 3, littleEndian: true)
        for cut in 6..<crafted.count {
            var bytes = Array(crafted.prefix(cut))
            let length = max(2, cut - 4)
            if bytes.count >= 6 { bytes[4] = UInt8(length >> 8); bytes[5] = UInt8(length & 0xFF) }
            let value = EXIF.orientation(in: bytes)
            #expect(value == nil || value == 3)
        }
    }

    @Test("IFD offsets and entry counts pointing outside the block give nil")
    func bogusOffsets() {
        var crafted = Self.exifJPEG(orientation: 6, littleEndian: false)
        let tiffStart = 6 + 6
        // IFD0 offset far past the end.
        crafted[tiffStart + 4] = 0x7F
        #expect(EXIF.orientation(in: crafted) == nil)
        var manyEntries = Self.exifJPEG(orientation: 6, littleEndian: false)
        // Entry count 0xFFFF with the Orientation entry cut off: bounded reads give nil.
        manyEntries[tiffStart + 8] = 0xFF; manyEntries[tiffStart + 9] = 0xFF
        manyEntries[tiffStart + 10 + 12] = 0x00  // break the Orientation tag
        #expect(EXIF.orientation(in: manyEntries) == nil)
    }

    @Test("random garbage after a JPEG-looking prefix never crashes the parser")
    func randomGarbage() {
        var random = SplitMix64(seed: 0x5EED)
        var found = 0
        for round in 0..<3000 {
            let length = Int.random(in: 0...300, using: &random)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Most rounds start like SOI + Exif APP1 so the random bytes reach the TIFF parser.
            if round % 4 != 0 {
                let app1Length = Int.random(in: 0...400, using: &random)
                let order: [UInt8] = round % 2 == 0 ? [0x49, 0x49, 42, 0] : [0x4D, 0x4D, 0, 42]
                bytes = [0xFF, 0xD8, 0xFF, 0xE1, UInt8(app1Length >> 8), UInt8(app1Length & 0xFF)]
                    + Array("Exif\0\0".utf8) + order + bytes
            }
            if let value = EXIF.orientation(in: bytes) {
                #expect((1...8).contains(value))
                found += 1
            }
            #expect(throws: JPEGError.self) { try JPEG.header(of: bytes) }
        }
        #expect(found < 3000)
    }
}
