/// A TrueType font file, read for what a PDF needs: metrics (`head`, `hhea`, `hmtx`, `maxp`,
/// `OS/2`), the character map (`cmap` formats 4 and 12), the glyph outlines (`loca`, `glyf`)
/// for subsetting, and its names (`name`).
///
/// Every table is bounds-checked when the file is read, and every later read is checked again:
/// a damaged font gives an error or a missing glyph, never a crash.
struct TrueTypeFont: Sendable {
    /// The whole file.
    let data: [UInt8]
    /// Each table's bytes in `data`, by tag ("glyf").
    let tables: [String: Range<Int>]
    /// Font units per em (often 1000 or 2048).
    let unitsPerEm: Int
    /// The bounding box of all glyphs, in font units: xMin, yMin, xMax, yMax.
    let boundingBox: [Int]
    /// `hhea` ascender and descender (negative), in font units.
    let ascender: Int
    let descender: Int
    /// `OS/2` capital height in font units, or the ascender when the table has none.
    let capHeight: Int
    /// Glyphs in the font (`maxp`).
    let glyphCount: Int
    /// Entries with an advance in `hmtx` (`hhea`).
    let horizontalMetricCount: Int
    /// `head` indexToLocFormat: 0 for 16-bit offsets / 2, 1 for 32-bit offsets.
    let longOffsets: Bool
    /// The PostScript name (name ID 6), or one made from the file name.
    let postScriptName: String
    /// Family (ID 1) and subfamily (ID 2) names, for the subset's own `name` table.
    let familyName: String
    let subfamilyName: String
    /// Italic angle in degrees from `post`, 0 without it.
    let italicAngle: Double
    /// The Unicode subtable used for lookups.
    private let characterMap: CharacterMap
    /// The tables read for every glyph, kept apart from `tables` to spare a lookup by tag.
    private let metricsTable: Range<Int>
    private let locationTable: Range<Int>
    private let glyphTable: Range<Int>

    private enum CharacterMap: Sendable {
        case segments(Range<Int>)  // format 4
        case groups(Range<Int>)  // format 12
    }

    /// Reads the font in `data`; `path` is only for messages.
    init(data: [UInt8], path: String) throws(PDFError) {
        func invalid(_ message: String) -> PDFError { PDFError(kind: .invalidFont, message: "font \(path): \(message)") }
        let reader = ByteReader(data)
        guard data.count >= 12 else { throw invalid("\(data.count) bytes is too short for a TrueType font") }
        switch reader.u32(0) {
        case 0x0001_0000, 0x7472_7565:  // 1.0 and "true"
            break
        case 0x4F54_544F:  // "OTTO"
            throw invalid("is OpenType with CFF outlines (.otf); only TrueType outlines (.ttf) can be embedded")
        case 0x7474_6366:  // "ttcf"
            throw invalid("is a TrueType collection (.ttc); only single fonts (.ttf) can be embedded")
        default:
            throw invalid("is not a TrueType font (it starts \(PDFSyntax.hex(data.prefix(4))))")
        }
        let tableCount = reader.u16(4)
        guard 12 + tableCount * 16 <= data.count else { throw invalid("its table directory of \(tableCount) tables runs past the end of the file") }
        var tables: [String: Range<Int>] = [:]
        for index in 0..<tableCount {
            let record = 12 + index * 16
            let tag = String(decoding: data[record..<record + 4], as: UTF8.self)
            let offset = reader.u32(record + 8), length = reader.u32(record + 12)
            guard offset <= data.count, length <= data.count - offset else {
                throw invalid("table '\(tag)' (offset \(offset), \(length) bytes) runs past the end of the \(data.count)-byte file")
            }
            tables[tag] = offset..<offset + length
        }
        for tag in ["head", "hhea", "hmtx", "maxp", "cmap", "loca", "glyf"] where tables[tag] == nil {
            throw invalid("has no '\(tag)' table")
        }
        let head = tables["head"]!, hhea = tables["hhea"]!, maxp = tables["maxp"]!
        guard head.count >= 54 else { throw invalid("its 'head' table is \(head.count) bytes (54 expected)") }
        guard hhea.count >= 36 else { throw invalid("its 'hhea' table is \(hhea.count) bytes (36 expected)") }
        guard maxp.count >= 6 else { throw invalid("its 'maxp' table is \(maxp.count) bytes (at least 6)") }
        unitsPerEm = reader.u16(head.lowerBound + 18)
        guard (16...16384).contains(unitsPerEm) else { throw invalid("unitsPerEm is \(unitsPerEm) (16 to 16384)") }
        boundingBox = [36, 38, 40, 42].map { reader.s16(head.lowerBound + $0) }
        longOffsets = reader.s16(head.lowerBound + 50) == 1
        ascender = reader.s16(hhea.lowerBound + 4)
        descender = reader.s16(hhea.lowerBound + 6)
        horizontalMetricCount = reader.u16(hhea.lowerBound + 34)
        glyphCount = reader.u16(maxp.lowerBound + 4)
        guard glyphCount > 0 else { throw invalid("has no glyphs (maxp numGlyphs is 0)") }
        guard horizontalMetricCount >= 1, horizontalMetricCount <= glyphCount else {
            throw invalid("hhea numberOfHMetrics is \(horizontalMetricCount) for \(glyphCount) glyphs")
        }
        let hmtx = tables["hmtx"]!
        guard hmtx.count >= horizontalMetricCount * 4 + (glyphCount - horizontalMetricCount) * 2 else {
            throw invalid("its 'hmtx' table is \(hmtx.count) bytes, too short for \(glyphCount) glyphs")
        }
        let loca = tables["loca"]!
        guard loca.count >= (glyphCount + 1) * (longOffsets ? 4 : 2) else {
            throw invalid("its 'loca' table is \(loca.count) bytes, too short for \(glyphCount) glyphs")
        }
        if let os2 = tables["OS/2"], os2.count >= 90, reader.u16(os2.lowerBound) >= 2, reader.s16(os2.lowerBound + 88) > 0 {
            capHeight = reader.s16(os2.lowerBound + 88)
        } else {
            capHeight = ascender
        }
        if let post = tables["post"], post.count >= 8 {
            italicAngle = Double(reader.s32(post.lowerBound + 4)) / 65536
        } else {
            italicAngle = 0
        }
        guard let map = Self.unicodeMap(reader, tables["cmap"]!) else {
            throw invalid("has no Unicode character map (cmap format 4 or 12)")
        }
        characterMap = map
        let names = Self.names(reader, tables["name"])
        let fallbackName = path.split(separator: "/").last.map { String($0.split(separator: ".").first ?? $0) } ?? "Font"
        postScriptName = Self.postScriptSafe(names[6] ?? fallbackName)
        familyName = names[1] ?? postScriptName
        subfamilyName = names[2] ?? "Regular"
        self.data = data
        self.tables = tables
        metricsTable = hmtx
        locationTable = loca
        glyphTable = tables["glyf"]!
    }

    // MARK: Lookups

    /// The glyph for `scalar`, or nil when the font has none (glyph 0 is "no glyph").
    func glyph(for scalar: Unicode.Scalar) -> UInt16? {
        let reader = ByteReader(data)
        let code = Int(scalar.value)
        var glyph = 0
        switch characterMap {
        case .segments(let table):
            guard code <= 0xFFFF else { return nil }
            let segmentCount = reader.u16(table.lowerBound + 6) / 2
            let ends = table.lowerBound + 14
            let starts = ends + segmentCount * 2 + 2
            let deltas = starts + segmentCount * 2
            let rangeOffsets = deltas + segmentCount * 2
            var low = 0, high = segmentCount - 1
            while low < high {
                let middle = (low + high) / 2
                if reader.u16(ends + middle * 2) < code { low = middle + 1 } else { high = middle }
            }
            guard segmentCount > 0, reader.u16(ends + low * 2) >= code, reader.u16(starts + low * 2) <= code else { return nil }
            let delta = reader.u16(deltas + low * 2)
            let rangeOffset = reader.u16(rangeOffsets + low * 2)
            if rangeOffset == 0 {
                glyph = (code + delta) & 0xFFFF
            } else {
                let at = rangeOffsets + low * 2 + rangeOffset + 2 * (code - reader.u16(starts + low * 2))
                guard at + 2 <= table.upperBound else { return nil }
                let raw = reader.u16(at)
                glyph = raw == 0 ? 0 : (raw + delta) & 0xFFFF
            }
        case .groups(let table):
            let count = reader.u32(table.lowerBound + 12)
            var low = 0, high = count
            while low < high {
                let middle = (low + high) / 2
                let group = table.lowerBound + 16 + middle * 12
                if reader.u32(group + 4) < code {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            guard low < count else { return nil }
            let group = table.lowerBound + 16 + low * 12
            let start = reader.u32(group)
            guard start <= code, code <= reader.u32(group + 4) else { return nil }
            glyph = reader.u32(group + 8) + code - start
        }
        guard glyph > 0, glyph < glyphCount else { return nil }
        return UInt16(glyph)
    }

    /// The advance width of `glyph` in font units.
    func advance(of glyph: UInt16) -> Int {
        let entry = min(Int(glyph), horizontalMetricCount - 1)
        return ByteReader(data).u16(metricsTable.lowerBound + entry * 4)
    }

    /// The left side bearing of `glyph` in font units.
    func leftSideBearing(of glyph: UInt16) -> Int {
        let index = Int(glyph)
        if index < horizontalMetricCount { return ByteReader(data).s16(metricsTable.lowerBound + index * 4 + 2) }
        return ByteReader(data).s16(metricsTable.lowerBound + horizontalMetricCount * 4 + (index - horizontalMetricCount) * 2)
    }

    /// The advance width of `glyph` in thousandths of an em, rounded as the PDF's `/W` array
    /// gives it, so measuring and viewers agree to the unit.
    func width1000(of glyph: UInt16) -> Int {
        Int((Double(advance(of: glyph)) * 1000 / Double(unitsPerEm)).rounded())
    }

    /// `value` font units in thousandths of an em.
    func scaled(_ value: Int) -> Int {
        Int((Double(value) * 1000 / Double(unitsPerEm)).rounded())
    }

    /// The bytes of `glyph` in `data` (empty for glyphs with no outline), or nil when `loca`
    /// points outside `glyf`.
    func outline(of glyph: UInt16) -> Range<Int>? {
        let reader = ByteReader(data)
        let loca = locationTable, glyf = glyphTable
        let index = Int(glyph)
        let start: Int, end: Int
        if longOffsets {
            start = reader.u32(loca.lowerBound + index * 4)
            end = reader.u32(loca.lowerBound + index * 4 + 4)
        } else {
            start = reader.u16(loca.lowerBound + index * 2) * 2
            end = reader.u16(loca.lowerBound + index * 2 + 2) * 2
        }
        guard start <= end, end <= glyf.count else { return nil }
        return glyf.lowerBound + start..<glyf.lowerBound + end
    }

    /// The glyphs a composite glyph is built from (empty for a simple glyph).
    func components(of glyph: UInt16) -> [UInt16] {
        guard let outline = outline(of: glyph), outline.count >= 10 else { return [] }
        let reader = ByteReader(data)
        guard reader.s16(outline.lowerBound) < 0 else { return [] }
        var components: [UInt16] = []
        var at = outline.lowerBound + 10
        while at + 4 <= outline.upperBound {
            let flags = reader.u16(at)
            let component = reader.u16(at + 2)
            if component < glyphCount { components.append(UInt16(component)) }
            at += 4 + (flags & 0x0001 != 0 ? 4 : 2)  // ARG_1_AND_2_ARE_WORDS
            if flags & 0x0008 != 0 {  // WE_HAVE_A_SCALE
                at += 2
            } else if flags & 0x0040 != 0 {  // WE_HAVE_AN_X_AND_Y_SCALE
                at += 4
            } else if flags & 0x0080 != 0 {  // WE_HAVE_A_TWO_BY_TWO
                at += 8
            }
            guard flags & 0x0020 != 0 else { break }  // MORE_COMPONENTS
        }
        return components
    }

    // MARK: Reading tables

    /// The best Unicode subtable: full-range format 12 first, then BMP format 4.
    private static func unicodeMap(_ reader: ByteReader, _ cmap: Range<Int>) -> CharacterMap? {
        guard cmap.count >= 4 else { return nil }
        let count = reader.u16(cmap.lowerBound + 2)
        var best: (rank: Int, map: CharacterMap)?
        for index in 0..<count {
            let record = cmap.lowerBound + 4 + index * 8
            guard record + 8 <= cmap.upperBound else { break }
            let platform = reader.u16(record), encoding = reader.u16(record + 2)
            let start = cmap.lowerBound + reader.u32(record + 4)
            guard start + 8 <= cmap.upperBound else { continue }
            let unicode = platform == 0 || (platform == 3 && (encoding == 1 || encoding == 10))
            guard unicode else { continue }
            let candidate: (rank: Int, map: CharacterMap)
            switch reader.u16(start) {
            case 4:
                let length = reader.u16(start + 2)
                let segments = reader.u16(start + 6) / 2
                guard length >= 16 + segments * 8, start + length <= cmap.upperBound else { continue }
                candidate = (1, .segments(start..<start + length))
            case 12:
                guard start + 16 <= cmap.upperBound else { continue }
                let length = reader.u32(start + 4)
                let groups = reader.u32(start + 12)
                guard groups <= (cmap.upperBound - start) / 12, length >= 16 + groups * 12, start + length <= cmap.upperBound else { continue }
                candidate = (2, .groups(start..<start + length))
            default:
                continue
            }
            if candidate.rank > (best?.rank ?? 0) { best = candidate }
        }
        return best?.map
    }

    /// Name records by ID, preferring Windows Unicode (platform 3) English, then Mac Roman.
    private static func names(_ reader: ByteReader, _ table: Range<Int>?) -> [Int: String] {
        guard let table, table.count >= 6 else { return [:] }
        let count = reader.u16(table.lowerBound + 2)
        let storage = table.lowerBound + reader.u16(table.lowerBound + 4)
        var found: [Int: (rank: Int, text: String)] = [:]
        for index in 0..<count {
            let record = table.lowerBound + 6 + index * 12
            guard record + 12 <= table.upperBound else { break }
            let platform = reader.u16(record), encoding = reader.u16(record + 2), language = reader.u16(record + 4)
            let id = reader.u16(record + 6), length = reader.u16(record + 8), offset = reader.u16(record + 10)
            guard [1, 2, 6].contains(id), storage + offset + length <= table.upperBound else { continue }
            let bytes = Array(reader.data[storage + offset..<storage + offset + length])
            let rank: Int, text: String
            if platform == 3, encoding == 1 || encoding == 0 {
                rank = language == 0x409 ? 3 : 2
                var units: [UInt16] = []
                var at = 0
                while at + 1 < bytes.count {
                    units.append(UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]))
                    at += 2
                }
                text = String(decoding: units, as: UTF16.self)
            } else if platform == 1, encoding == 0 {
                rank = 1
                text = String(decoding: bytes.filter { $0 < 0x80 }, as: UTF8.self)
            } else {
                continue
            }
            if rank > found[id]?.rank ?? 0, !text.isEmpty { found[id] = (rank, text) }
        }
        return found.mapValues(\.text)
    }

    /// `name` reduced to the printable ASCII a PostScript name may hold.
    private static func postScriptSafe(_ name: String) -> String {
        let kept = name.unicodeScalars.filter { $0.value > 0x20 && $0.value < 0x7F && !"()<>[]{}/%#".unicodeScalars.contains($0) }
        let text = String(String.UnicodeScalarView(kept.prefix(63)))
        return text.isEmpty ? "Font" : text
    }
}

/// Big-endian reads from a byte array that return 0 outside it instead of trapping.
struct ByteReader {
    let data: [UInt8]

    init(_ data: [UInt8]) { self.data = data }

    func u8(_ at: Int) -> Int { at >= 0 && at < data.count ? Int(data[at]) : 0 }
    func u16(_ at: Int) -> Int { u8(at) << 8 | u8(at + 1) }
    func s16(_ at: Int) -> Int { Int(Int16(truncatingIfNeeded: u16(at))) }
    func u32(_ at: Int) -> Int { u16(at) << 16 | u16(at + 2) }
    func s32(_ at: Int) -> Int { Int(Int32(truncatingIfNeeded: u32(at))) }
}
