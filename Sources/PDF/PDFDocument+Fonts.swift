extension PDFDocument {
    /// Writes `usage`'s font: a standard font's dictionary, or a TrueType font as a Type0 font
    /// with a CIDFontType2 descendant (Identity-H, CIDToGIDMap Identity, /W of the glyphs used),
    /// its descriptor, the subset font file and a ToUnicode map for text extraction.
    func writeFont(_ usage: FontUsage) throws(PDFError) {
        switch usage.font.program {
        case .standard(let font):
            let widths = font.widths.map(String.init).joined(separator: " ")
            try writeObject(
                usage.objectNumber,
                "<< /Type /Font /Subtype /Type1 /BaseFont /\(font.name) /Encoding /WinAnsiEncoding /FirstChar 32 /LastChar 255 /Widths [\(widths)] >>"
            )
        case .trueType(let font):
            try writeTrueType(font, usage: usage)
        }
    }

    private func writeTrueType(_ font: TrueTypeFont, usage: FontUsage) throws(PDFError) {
        let glyphs = usage.glyphs.keys.sorted()
        let baseFont = PDFSyntax.name(Self.subsetTag(font.postScriptName, glyphs) + "+" + font.postScriptName)
        let cidFont = newObject(), descriptor = newObject(), fontFile = newObject(), toUnicode = newObject()

        try writeObject(
            usage.objectNumber,
            "<< /Type /Font /Subtype /Type0 /BaseFont \(baseFont) /Encoding /Identity-H /DescendantFonts [\(cidFont) 0 R] /ToUnicode \(toUnicode) 0 R >>"
        )
        try writeObject(
            cidFont,
            "<< /Type /Font /Subtype /CIDFontType2 /BaseFont \(baseFont) /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >>"
                + " /FontDescriptor \(descriptor) 0 R /DW 1000 /W \(Self.widthArray(glyphs, font)) /CIDToGIDMap /Identity >>")
        let box = font.boundingBox.map { String(font.scaled($0)) }.joined(separator: " ")
        try writeObject(
            descriptor,
            "<< /Type /FontDescriptor /FontName \(baseFont) /Flags 4 /FontBBox [\(box)] /ItalicAngle \(PDFSyntax.number(font.italicAngle))"
                + " /Ascent \(font.scaled(font.ascender)) /Descent \(font.scaled(font.descender)) /CapHeight \(font.scaled(font.capHeight))"
                + " /StemV 80 /FontFile2 \(fontFile) 0 R >>")
        let subset = font.subset(keeping: Set(glyphs))
        try writeStream(fontFile, dictionary: " /Length1 \(subset.count)", bytes: subset)
        try writeStream(toUnicode, dictionary: "", bytes: Array(Self.toUnicodeMap(usage.glyphs).utf8))
    }

    /// The /W array: runs of consecutive glyph IDs with their widths ("[3 [278 278] 17 [556]]").
    static func widthArray(_ glyphs: [UInt16], _ font: TrueTypeFont) -> String {
        var text = "["
        var index = 0
        while index < glyphs.count {
            var end = index + 1
            while end < glyphs.count, glyphs[end] == glyphs[end - 1] + 1 { end += 1 }
            let widths = glyphs[index..<end].map { String(font.width1000(of: $0)) }.joined(separator: " ")
            text += (index == 0 ? "" : " ") + "\(glyphs[index]) [\(widths)]"
            index = end
        }
        return text + "]"
    }

    /// A ToUnicode CMap from each glyph ID to the character it was drawn for, so text can be
    /// searched and copied.
    static func toUnicodeMap(_ glyphs: [UInt16: Unicode.Scalar]) -> String {
        var text = """
            /CIDInit /ProcSet findresource begin
            12 dict begin
            begincmap
            /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
            /CMapName /Adobe-Identity-UCS def
            /CMapType 2 def
            1 begincodespacerange
            <0000> <FFFF>
            endcodespacerange

            """
        let entries = glyphs.sorted { $0.key < $1.key }
        // At most 100 entries per bfchar block (PDF's CMap limits).
        var start = 0
        while start < entries.count {
            let block = entries[start..<min(entries.count, start + 100)]
            text += "\(block.count) beginbfchar\n"
            for (glyph, scalar) in block {
                let units = String(scalar).utf16.map { PDFSyntax.hex16($0) }.joined()
                text += "<\(PDFSyntax.hex16(glyph))> <\(units)>\n"
            }
            text += "endbfchar\n"
            start += 100
        }
        text += """
            endcmap
            CMapName currentdict /CMap defineresource pop
            end
            end

            """
        return text
    }

    /// Six capital letters that name this subset of the font (ISO 32000-1 §9.6.4), the same for
    /// the same glyphs.
    static func subsetTag(_ name: String, _ glyphs: [UInt16]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(name.utf8) + glyphs.flatMap({ [UInt8($0 >> 8), UInt8($0 & 0xFF)] }) {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        var tag = ""
        for _ in 0..<6 {
            tag.append(Character(Unicode.Scalar(UInt8(65 + hash % 26))))
            hash /= 26
        }
        return tag
    }
}
