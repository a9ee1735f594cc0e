extension TrueTypeFont {
    /// A smaller font file that draws `glyphs` exactly as this one does, with the same glyph IDs.
    ///
    /// Subsetting by emptying: every glyph not used (nor a component of a used composite) keeps
    /// its ID but loses its outline; glyphs after the highest one used are dropped. Glyph 0
    /// (.notdef) is kept. Only the tables a PDF viewer draws with are written: `head`, `hhea`,
    /// `maxp`, `hmtx`, `loca`, `glyf`, the hinting tables (`cvt `, `fpgm`, `prep`, `gasp`) and
    /// `OS/2`, with a small `name`, a `post` without glyph names and an empty `cmap` (the PDF
    /// addresses glyphs by ID). Offsets, checksums and `checkSumAdjustment` are recomputed.
    func subset(keeping glyphs: Set<UInt16>) -> [UInt8] {
        var kept: Set<UInt16> = []
        var pending = Array(glyphs) + [0]
        while let glyph = pending.popLast() {
            guard glyph < glyphCount, kept.insert(glyph).inserted else { continue }
            pending.append(contentsOf: components(of: glyph))
        }
        let count = Int(kept.max()!) + 1

        // glyf and loca: each kept outline copied, padded to an even length.
        var glyf: [UInt8] = []
        var offsets: [Int] = [0]
        for glyph in 0..<count {
            if kept.contains(UInt16(glyph)), let outline = outline(of: UInt16(glyph)) {
                glyf.append(contentsOf: data[outline])
                if glyf.count % 2 == 1 { glyf.append(0) }
            }
            offsets.append(glyf.count)
        }
        let shortOffsets = glyf.count <= 0x1FFFE
        var loca: [UInt8] = []
        for offset in offsets {
            if shortOffsets { loca.appendU16(offset / 2) } else { loca.appendU32(offset) }
        }

        // hmtx: every glyph up to the last one kept with its own advance and bearing.
        var hmtx: [UInt8] = []
        for glyph in 0..<count {
            hmtx.appendU16(advance(of: UInt16(glyph)))
            hmtx.appendU16(leftSideBearing(of: UInt16(glyph)) & 0xFFFF)
        }

        var head = Array(data[tables["head"]!])
        head.setU32(8, 0)  // checkSumAdjustment, set once the whole file is known
        head.setU16(50, shortOffsets ? 0 : 1)
        var hhea = Array(data[tables["hhea"]!])
        hhea.setU16(34, count)
        var maxp = Array(data[tables["maxp"]!])
        maxp.setU16(4, count)

        var out: [String: [UInt8]] = [
            "head": head, "hhea": hhea, "maxp": maxp, "hmtx": hmtx, "loca": loca, "glyf": glyf,
            "cmap": Self.emptyCharacterMap, "name": nameTable(),
        ]
        for tag in ["cvt ", "fpgm", "prep", "gasp", "OS/2"] {
            if let range = tables[tag] { out[tag] = Array(data[range]) }
        }
        if let post = tables["post"], post.count >= 32 {
            var table = Array(data[post.prefix(32)])
            table.setU32(0, 0x0003_0000)  // version 3: no glyph names
            out["post"] = table
        }
        return Self.assemble(out)
    }

    /// A `cmap` with one format 4 subtable that maps nothing but its required last segment.
    private static let emptyCharacterMap: [UInt8] = {
        var table: [UInt8] = []
        for value in [0, 1, 3, 1] { table.appendU16(value) }  // version 0, 1 subtable: Windows Unicode BMP
        table.appendU32(12)
        // format 4, length 24, language 0, segCountX2 2, searchRange 2, entrySelector 0, rangeShift 0
        for value in [4, 24, 0, 2, 2, 0, 0, 0xFFFF, 0, 0xFFFF, 1, 0] { table.appendU16(value) }
        return table
    }()

    /// A `name` table with the family, subfamily, full and PostScript names (Windows, English).
    private func nameTable() -> [UInt8] {
        let records: [(id: Int, text: String)] = [
            (1, familyName), (2, subfamilyName), (4, "\(familyName) \(subfamilyName)"), (6, postScriptName),
        ]
        var strings: [UInt8] = []
        var table: [UInt8] = []
        table.appendU16(0)
        table.appendU16(records.count)
        table.appendU16(6 + records.count * 12)
        for record in records {
            let start = strings.count
            for unit in record.text.utf16 { strings.appendU16(Int(unit)) }
            for value in [3, 1, 0x409, record.id, strings.count - start, start] { table.appendU16(value) }
        }
        return table + strings
    }

    /// A font file from its tables: directory sorted by tag, tables 4-byte aligned, checksums set.
    private static func assemble(_ tables: [String: [UInt8]]) -> [UInt8] {
        let tags = tables.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        var power = 1, log = 0
        while power * 2 <= tags.count {
            power *= 2
            log += 1
        }
        var file: [UInt8] = []
        file.appendU32(0x0001_0000)
        file.appendU16(tags.count)
        file.appendU16(power * 16)
        file.appendU16(log)
        file.appendU16(tags.count * 16 - power * 16)
        var offset = 12 + tags.count * 16
        var body: [UInt8] = []
        var headOffset = 0
        for tag in tags {
            let table = tables[tag]!
            file.append(contentsOf: Array(tag.utf8))
            file.appendU32(checksum(table))
            file.appendU32(offset)
            file.appendU32(table.count)
            if tag == "head" { headOffset = offset }
            body.append(contentsOf: table)
            while body.count % 4 != 0 { body.append(0) }
            offset = 12 + tags.count * 16 + body.count
        }
        file.append(contentsOf: body)
        file.setU32(headOffset + 8, (0xB1B0_AFBA &- checksum(file)) & 0xFFFF_FFFF)
        return file
    }

    /// The sum of the table's big-endian 32-bit words (zero-padded), modulo 2³².
    private static func checksum(_ bytes: [UInt8]) -> Int {
        var sum: UInt32 = 0
        var index = 0
        while index < bytes.count {
            var word: UInt32 = 0
            for byte in 0..<4 {
                word = word << 8 | UInt32(index + byte < bytes.count ? bytes[index + byte] : 0)
            }
            sum = sum &+ word
            index += 4
        }
        return Int(sum)
    }
}

extension [UInt8] {
    mutating func appendU16(_ value: Int) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendU32(_ value: Int) {
        appendU16(value >> 16)
        appendU16(value)
    }

    mutating func setU16(_ at: Int, _ value: Int) {
        self[at] = UInt8(truncatingIfNeeded: value >> 8)
        self[at + 1] = UInt8(truncatingIfNeeded: value)
    }

    mutating func setU32(_ at: Int, _ value: Int) {
        setU16(at, value >> 16)
        setU16(at + 2, value)
    }
}
