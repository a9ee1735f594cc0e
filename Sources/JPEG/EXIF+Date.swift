extension EXIF {
    /// When the photo was taken: the DateTimeOriginal tag (0x9003) of the Exif IFD, as written
    /// ("2024:07:14 18:03:55"); nil when absent, malformed or not 19 characters of that form.
    public static func dateTimeOriginal(in jpeg: [UInt8]) -> String? {
        jpeg.withUnsafeBytes { tiff(in: $0)?.dateTimeOriginal() }
    }
}

extension TIFFReader {
    /// IFD0's pointer to the Exif IFD (0x8769), then that IFD's DateTimeOriginal (0x9003),
    /// an ASCII value of 20 bytes (19 and a NUL) stored at its offset.
    func dateTimeOriginal() -> String? {
        guard let ifd0 = u32(at: 4), let exifIFD = value(ofTag: 0x8769, inIFDAt: ifd0),
            let entry = entry(ofTag: 0x9003, inIFDAt: exifIFD), entry.type == 2, entry.count >= 19,
            let offset = u32(at: entry.at + 8), offset >= 0, offset + 19 <= end - start
        else { return nil }
        let text = data[(start + offset)..<(start + offset + 19)]
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
        return String(decoding: text, as: UTF8.self)
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
