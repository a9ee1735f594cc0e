/// A content stream being built (a page's, or a form's) with the resources it uses: the
/// fonts, under names local to the stream, with the glyphs drawn in each, and the characters
/// no font had.
struct PDFContent {
    /// The stream's bytes so far.
    private(set) var bytes: [UInt8] = []
    /// The fonts drawn with, in first-use order.
    private(set) var fonts: [Font] = []
    private var fontIndex: [ObjectIdentifier: Int] = [:]
    /// Characters no font of a chain had.
    private(set) var missing: Set<Unicode.Scalar> = []

    /// A font drawn with: its resource name in this stream and the glyphs used, each with the
    /// character it was drawn for (TrueType only; a standard font needs no record).
    struct Font {
        let font: PDFFont
        let name: String
        var glyphs: [UInt16: Unicode.Scalar] = [:]
    }

    /// Bytes held, roughly: the stream and the glyph records.
    var byteCount: Int { bytes.count + fonts.reduce(0) { $0 + 32 + $1.glyphs.count * 8 } }

    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends "x y Td" and the text operators for `layout` (inside BT … ET): a font selection
    /// and a hex string per run.
    mutating func appendText(_ layout: PDFFontChain.Layout, font chain: PDFFontChain, size: Double, x: Double, y: Double) {
        missing.formUnion(layout.missing)
        guard !layout.runs.isEmpty else { return }
        append("BT \(PDFSyntax.number(x)) \(PDFSyntax.number(y)) Td")
        for run in layout.runs {
            let font = chain.fonts[run.font]
            let index = register(font)
            var codes: [UInt8] = []
            for (glyph, scalar) in zip(run.glyphs, run.scalars) {
                if font.bytesPerCode == 2 {
                    codes.append(UInt8(glyph.code >> 8))
                    codes.append(UInt8(glyph.code & 0xFF))
                    if fonts[index].glyphs[glyph.code] == nil { fonts[index].glyphs[glyph.code] = scalar }
                } else {
                    codes.append(UInt8(glyph.code))
                }
            }
            append(" \(fonts[index].name) \(PDFSyntax.number(size)) Tf <\(PDFSyntax.hex(codes))> Tj")
        }
        append(" ET")
    }

    /// The index of `font` in `fonts`, adding it on first use.
    private mutating func register(_ font: PDFFont) -> Int {
        if let index = fontIndex[ObjectIdentifier(font)] { return index }
        fonts.append(Font(font: font, name: "/F\(fonts.count + 1)"))
        fontIndex[ObjectIdentifier(font)] = fonts.count - 1
        return fonts.count - 1
    }
}
