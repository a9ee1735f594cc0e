/// Bounds-checked reads inside one TIFF block, in its byte order.
struct TIFFReader {
    let data: [UInt8]
    /// Where the TIFF header starts; IFD offsets count from here.
    let start: Int
    /// One past the last byte of the APP1 payload.
    let end: Int
    let littleEndian: Bool

    init?(data: [UInt8], start: Int, end: Int) {
        guard start + 8 <= end else { return nil }
        self.data = data
        self.start = start
        self.end = end
        switch (data[start], data[start + 1]) {
        case (0x49, 0x49): littleEndian = true  // "II", Intel
        case (0x4D, 0x4D): littleEndian = false  // "MM", Motorola
        default: return nil
        }
        guard u16(at: 2) == 42 else { return nil }
    }

    /// IFD0's Orientation value when it is a valid 1...8.
    func orientation() -> Int? {
        guard let ifd = u32(at: 4), let entryCount = u16(at: ifd) else { return nil }
        for entry in 0..<entryCount {
            let offset = ifd + 2 + entry * 12
            guard let tag = u16(at: offset), let type = u16(at: offset + 2) else { return nil }
            guard tag == 0x0112 else { continue }
            // The spec says SHORT; some writers use LONG. The value sits in the entry itself.
            let value: Int?
            switch type {
            case 3: value = u16(at: offset + 8)
            case 4: value = u32(at: offset + 8)
            default: value = nil
            }
            guard let value, (1...8).contains(value) else { return nil }
            return value
        }
        return nil
    }

    /// The unsigned 16-bit value at `offset` from the TIFF start, or nil past the end.
    func u16(at offset: Int) -> Int? {
        guard offset >= 0, offset <= end - start - 2 else { return nil }
        let a = Int(data[start + offset]), b = Int(data[start + offset + 1])
        return littleEndian ? b << 8 | a : a << 8 | b
    }

    /// The unsigned 32-bit value at `offset` from the TIFF start, or nil past the end.
    func u32(at offset: Int) -> Int? {
        guard let first = u16(at: offset), let second = u16(at: offset + 2) else { return nil }
        return littleEndian ? second << 16 | first : first << 16 | second
    }
}
