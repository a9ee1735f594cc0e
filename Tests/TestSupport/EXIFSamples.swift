/// APP1 Exif segments made for tests: an IFD0 whose one entry points to an Exif IFD holding the
/// tags given, in either byte order, and JPEGs with such a segment right after their SOI.
public enum EXIFSamples {
    /// One entry of the Exif IFD: its tag, type (2 = ASCII), count and value bytes. A value of
    /// 4 bytes or fewer is written in the entry, a longer one after the IFD, at its offset.
    public struct Entry: Sendable {
        public var tag: UInt16
        public var type: UInt16
        public var count: UInt32
        public var value: [UInt8]

        /// An entry as given, for values a writer gets wrong (a count that does not match, a
        /// type that is not ASCII).
        public init(tag: UInt16, type: UInt16 = 2, count: UInt32, value: [UInt8]) {
            self.tag = tag
            self.type = type
            self.count = count
            self.value = value
        }

        /// An ASCII value as EXIF writes it: the text and its NUL, counted.
        public static func ascii(_ tag: UInt16, _ text: String) -> Entry {
            let value = Array(text.utf8) + [0]
            return Entry(tag: tag, count: UInt32(value.count), value: value)
        }
    }

    /// DateTimeOriginal (0x9003), "YYYY:MM:DD HH:MM:SS" as cameras write it.
    public static func dateTimeOriginal(_ text: String) -> Entry { .ascii(0x9003, text) }

    /// OffsetTimeOriginal (0x9011), "+HH:MM".
    public static func offsetTimeOriginal(_ text: String) -> Entry { .ascii(0x9011, text) }

    /// The TIFF block (what follows "Exif\0\0"): header, IFD0 at 8 with the Exif IFD pointer
    /// (0x8769), the Exif IFD at 26 with `entries`, then the values that do not fit an entry.
    public static func tiff(_ entries: [Entry], littleEndian: Bool = true) -> [UInt8] {
        func u16(_ value: UInt16) -> [UInt8] {
            littleEndian ? [UInt8(value & 0xFF), UInt8(value >> 8)] : [UInt8(value >> 8), UInt8(value & 0xFF)]
        }
        func u32(_ value: UInt32) -> [UInt8] {
            littleEndian ? u16(UInt16(value & 0xFFFF)) + u16(UInt16(value >> 16)) : u16(UInt16(value >> 16)) + u16(UInt16(value & 0xFFFF))
        }
        var block: [UInt8] = (littleEndian ? Array("II".utf8) : Array("MM".utf8)) + u16(42) + u32(8)
        block += u16(1) + u16(0x8769) + u16(4) + u32(1) + u32(26) + u32(0)
        var data: [UInt8] = []
        let dataStart = 26 + 2 + 12 * entries.count + 4
        block += u16(UInt16(entries.count))
        for entry in entries {
            block += u16(entry.tag) + u16(entry.type) + u32(entry.count)
            if entry.value.count <= 4 {
                block += entry.value + [UInt8](repeating: 0, count: 4 - entry.value.count)
            } else {
                block += u32(UInt32(dataStart + data.count))
                data += entry.value
                if data.count % 2 == 1 { data.append(0) }  // TIFF values start on a word boundary
            }
        }
        block += u32(0)
        return block + data
    }

    /// The APP1 segment (FF E1, its length, "Exif\0\0", the TIFF block) of `entries`.
    public static func app1(_ entries: [Entry], littleEndian: Bool = true) -> [UInt8] {
        segment(tiff: tiff(entries, littleEndian: littleEndian))
    }

    /// An APP1 Exif segment around a TIFF block.
    public static func segment(tiff: [UInt8]) -> [UInt8] {
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        return [0xFF, 0xE1, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
    }

    /// `jpeg` with `app1` right after its SOI (before whatever APP segments it has).
    public static func inserting(_ app1: [UInt8], into jpeg: [UInt8]) -> [UInt8] {
        Array(jpeg.prefix(2)) + app1 + Array(jpeg.dropFirst(2))
    }
}
