/// One of the standard 14 fonts every PDF viewer has (Helvetica and Helvetica-Bold here), used
/// when no TrueType font file is at hand: nothing is embedded, text is encoded in
/// WinAnsiEncoding (Windows code page 1252), and what that encoding lacks cannot be drawn.
struct StandardFont: Sendable {
    /// The base font name ("Helvetica").
    let name: String
    /// Advance widths in thousandths of an em of WinAnsi codes 32…255 (0: no character).
    let widths: [Int]
    /// Ascender, descender (negative) and capital height in thousandths of an em, from the AFM.
    let ascender: Int
    let descender: Int
    let capHeight: Int
    /// The AFM's FontBBox: xMin, yMin, xMax, yMax.
    let boundingBox: [Int]

    /// The WinAnsi code for `scalar`, or nil when the encoding has none.
    func code(for scalar: Unicode.Scalar) -> UInt8? {
        let value = scalar.value
        switch value {
        case 0x20...0x7E, 0xA0...0xFF:
            return UInt8(value)
        case 0x100...0xFFFF:
            guard let index = Self.codePage1252High.firstIndex(of: UInt16(value)) else { return nil }
            return UInt8(0x80 + index)
        default:
            return nil
        }
    }

    /// The width of WinAnsi `code` in thousandths of an em.
    func width1000(of code: UInt8) -> Int {
        code >= 32 ? widths[Int(code) - 32] : 0
    }

    /// The Unicode characters of WinAnsi codes 0x80…0x9F (0 where the code page has none).
    static let codePage1252High: [UInt16] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
        0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ]

    /// Helvetica, with the widths of Adobe's Core 14 AFM (Helvetica.afm, version 003.001; the
    /// same numbers are in every PDF library, and in groff's devps/HR).
    static let helvetica = StandardFont(
        name: "Helvetica",
        widths: [
            278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
            556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
            1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
            667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
            333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
            556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, 0,
            556, 0, 222, 556, 333, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
            0, 222, 222, 333, 333, 350, 556, 1000, 333, 1000, 500, 333, 944, 0, 500, 667,
            278, 333, 556, 556, 556, 556, 260, 556, 333, 737, 370, 556, 584, 333, 737, 333,
            400, 584, 333, 333, 333, 578, 537, 278, 333, 333, 365, 556, 834, 834, 834, 611,
            667, 667, 667, 667, 667, 667, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
            722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
            556, 556, 556, 556, 556, 556, 889, 500, 556, 556, 556, 556, 278, 278, 278, 278,
            556, 556, 556, 556, 556, 556, 556, 584, 611, 556, 556, 556, 556, 500, 556, 500,
        ],
        ascender: 718, descender: -207, capHeight: 718, boundingBox: [-166, -225, 1000, 931])

    /// Helvetica-Bold, with the widths of Adobe's Core 14 AFM (Helvetica-Bold.afm, version 003.001).
    static let helveticaBold = StandardFont(
        name: "Helvetica-Bold",
        widths: [
            278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278,
            556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611,
            975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778,
            667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556,
            333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611,
            611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584, 0,
            556, 0, 278, 556, 500, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
            0, 278, 278, 500, 500, 350, 556, 1000, 333, 1000, 556, 333, 944, 0, 500, 667,
            278, 333, 556, 556, 556, 556, 280, 556, 333, 737, 370, 556, 584, 333, 737, 333,
            400, 584, 333, 333, 333, 611, 556, 278, 333, 333, 365, 556, 834, 834, 834, 611,
            722, 722, 722, 722, 722, 722, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
            722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
            556, 556, 556, 556, 556, 556, 889, 556, 556, 556, 556, 556, 278, 278, 278, 278,
            611, 611, 611, 611, 611, 611, 611, 584, 611, 611, 611, 611, 611, 556, 611, 556,
        ],
        ascender: 718, descender: -207, capHeight: 718, boundingBox: [-170, -228, 1003, 962])
}
