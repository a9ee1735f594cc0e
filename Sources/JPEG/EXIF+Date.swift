extension EXIF {
    /// When the photo was taken: the DateTimeOriginal tag (0x9003) of the Exif IFD, as written
    /// ("2024:07:14 18:03:55"); nil when absent, malformed, not 19 characters of that form, or
    /// a date or time out of range (month 1...12, day 1...31, hour 0...23, minute and second
    /// 0...59, year from 0001: the "0000:00:00 00:00:00" cameras write for unknown is nil).
    public static func dateTimeOriginal(in jpeg: [UInt8]) -> String? {
        jpeg.withUnsafeBytes { tiff(in: $0)?.dateTimeOriginal() }
    }

    /// The time zone of DateTimeOriginal: the OffsetTimeOriginal tag (0x9011) of the Exif IFD,
    /// "+HH:MM" or "-HH:MM" (hours 00...14, minutes 00...59), as written; nil when absent or of
    /// any other form.
    public static func offsetTimeOriginal(in jpeg: [UInt8]) -> String? {
        jpeg.withUnsafeBytes { tiff(in: $0)?.offsetTimeOriginal() }
    }

    /// When the photo was taken, in ISO 8601: DateTimeOriginal as local time
    /// "YYYY-MM-DDTHH:MM:SS", followed by OffsetTimeOriginal when the file has a valid one
    /// ("2024-05-07T09:33:04+08:00"); nil when there is no valid DateTimeOriginal.
    public static func takenAt(in jpeg: [UInt8]) -> String? {
        jpeg.withUnsafeBytes { takenAt(in: $0) }
    }

    /// `takenAt(in:)` of bytes in place (a request frame, a memory map): only the header's
    /// segments are walked, and only the first Exif APP1 (at most 64 KiB) is read.
    public static func takenAt(in jpeg: UnsafeRawBufferPointer) -> String? {
        tiff(in: jpeg)?.takenAt()
    }
}

extension TIFFReader {
    /// IFD0's pointer to the Exif IFD (0x8769), then that IFD's DateTimeOriginal (0x9003),
    /// an ASCII value of 20 bytes (19 and a NUL) stored at its offset, checked digit by digit
    /// and field by field (see `EXIF.dateTimeOriginal(in:)`).
    func dateTimeOriginal() -> String? {
        guard let text = exifASCII(tag: 0x9003, length: 19) else { return nil }
        // "YYYY:MM:DD HH:MM:SS": digits with the separators in place (so it sorts as it reads).
        for (index, byte) in text.enumerated() {
            let separator: UInt8? = switch index {
            case 4, 7: UInt8(ascii: ":")
            case 10: UInt8(ascii: " ")
            case 13, 16: UInt8(ascii: ":")
            default: nil
            }
            if let separator { guard byte == separator else { return nil } } else { guard (48...57).contains(byte) else { return nil } }
        }
        let digits = Array(text)
        func number(_ at: Int, _ count: Int) -> Int { digits[at..<(at + count)].reduce(0) { $0 * 10 + Int($1 - 48) } }
        guard number(0, 4) >= 1, (1...12).contains(number(5, 2)), (1...31).contains(number(8, 2)),
            number(11, 2) <= 23, number(14, 2) <= 59, number(17, 2) <= 59
        else { return nil }
        return String(decoding: text, as: UTF8.self)
    }

    /// The Exif IFD's OffsetTimeOriginal (0x9011): "+HH:MM" or "-HH:MM", an ASCII value of 7
    /// bytes (6 and a NUL) stored at its offset; hours 00...14 (UTC−12:00 to UTC+14:00 are the
    /// zones in use), minutes 00...59. Anything else (blanks for unknown, "Z", "+2:00") is nil.
    func offsetTimeOriginal() -> String? {
        guard let text = exifASCII(tag: 0x9011, length: 6, terminated: true) else { return nil }
        let bytes = Array(text)
        guard bytes[0] == UInt8(ascii: "+") || bytes[0] == UInt8(ascii: "-"), bytes[3] == UInt8(ascii: ":"),
            [1, 2, 4, 5].allSatisfy({ (48...57).contains(bytes[$0]) })
        else { return nil }
        let hours = Int(bytes[1] - 48) * 10 + Int(bytes[2] - 48), minutes = Int(bytes[4] - 48) * 10 + Int(bytes[5] - 48)
        guard hours <= 14, minutes <= 59 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// DateTimeOriginal in ISO 8601 ("2024-05-07T09:33:04"), with OffsetTimeOriginal after it
    /// when valid; nil without a valid DateTimeOriginal.
    func takenAt() -> String? {
        guard let date = dateTimeOriginal() else { return nil }
        var iso = Array(date.utf8)
        iso[4] = UInt8(ascii: "-")
        iso[7] = UInt8(ascii: "-")
        iso[10] = UInt8(ascii: "T")
        return String(decoding: iso, as: UTF8.self) + (offsetTimeOriginal() ?? "")
    }

    /// The first `length` characters of the ASCII (type 2) value of `tag` in the Exif IFD,
    /// which IFD0 points to (0x8769). The value must count at least `length` bytes, all of them
    /// inside the TIFF block (a count or an offset past its end is a malformed entry); with
    /// `terminated`, at most one more, which must be the NUL that ends it. A value of 4 bytes or
    /// fewer is in the entry itself, a longer one at its offset.
    func exifASCII(tag: Int, length: Int, terminated: Bool = false) -> ArraySlice<UInt8>? {
        guard let ifd0 = u32(at: 4), let exifIFD = value(ofTag: 0x8769, inIFDAt: ifd0),
            let entry = entry(ofTag: tag, inIFDAt: exifIFD), entry.type == 2, entry.count >= length,
            !terminated || entry.count <= length + 1
        else { return nil }
        let offset: Int
        if entry.count <= 4 {
            offset = entry.at + 8
        } else {
            guard let at = u32(at: entry.at + 8) else { return nil }
            offset = at
        }
        guard offset >= 0, offset <= end - start - entry.count else { return nil }
        if terminated, entry.count > length, data[start + offset + length] != 0 { return nil }
        return data[(start + offset)..<(start + offset + length)]
    }

    /// The entry of `tag` in the IFD at `ifd`: where it is, its type and count.
    func entry(ofTag tag: Int, inIFDAt ifd: Int) -> (at: Int, type: Int, count: Int)? {
        guard let entries = u16(at: ifd), entries <= 1000 else { return nil }
        for index in 0..<entries {
            let at = ifd + 2 + index * 12
            guard let found = u16(at: at), let type = u16(at: at + 2), let count = u32(at: at + 4) else { return nil }
            if found == tag { return (at, type, count) }
        }
        return nil
    }

    /// A LONG (or SHORT) value of `tag` held in its entry.
    func value(ofTag tag: Int, inIFDAt ifd: Int) -> Int? {
        guard let entry = entry(ofTag: tag, inIFDAt: ifd) else { return nil }
        switch entry.type {
        case 3: return u16(at: entry.at + 8)
        case 4, 13: return u32(at: entry.at + 8)
        default: return nil
        }
    }
}
