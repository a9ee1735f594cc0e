/// Fonts tried in order for each character: text is drawn in the first font of the chain that
/// has the character, so a Latin font can be followed by one for Cyrillic or CJK.
///
/// A character no font has is drawn as a visible replacement — U+FFFD "�" from the first font
/// that has it, else "?" — and the document records it (`PDFDocument.missingCharacters`).
/// Tabs and line breaks are drawn as spaces, other control characters and invisible format
/// characters (zero-width joiners, variation selectors, soft hyphens) are left out. As with
/// each font, there is no shaping and no bidirectional reordering (see `PDFFont`).
public struct PDFFontChain: Sendable {
    /// The fonts, first choice first; never empty.
    public let fonts: [PDFFont]
    /// What a missing character is drawn as: a font's index and its glyph.
    private let replacement: (font: Int, glyph: PDFFont.Glyph, scalar: Unicode.Scalar)?
    /// Printable ASCII (U+0020…U+007E), looked up once: most of a report's text, each
    /// character otherwise a cmap search in each font.
    private let ascii: [(font: Int, glyph: PDFFont.Glyph)?]

    /// A chain of `fonts`, tried in order; there must be at least one.
    public init(_ fonts: [PDFFont]) {
        precondition(!fonts.isEmpty, "a PDFFontChain needs at least one font")
        self.fonts = fonts
        var replacement: (Int, PDFFont.Glyph, Unicode.Scalar)?
        for scalar: Unicode.Scalar in ["\u{FFFD}", "?"] where replacement == nil {
            for (index, font) in fonts.enumerated() {
                if let glyph = font.glyph(for: scalar) {
                    replacement = (index, glyph, scalar)
                    break
                }
            }
        }
        self.replacement = replacement
        ascii = (0x20...0x7E).map { value in
            let scalar = Unicode.Scalar(UInt8(value))
            for (index, font) in fonts.enumerated() {
                if let glyph = font.glyph(for: scalar) { return (index, glyph) }
            }
            return nil
        }
    }

    /// A chain of one font.
    public init(_ font: PDFFont) {
        self.init([font])
    }

    /// `PDFFont.systemDefault(bold:)` (DejaVu Sans when installed, else Helvetica), then Droid
    /// Sans Fallback when installed (Debian's fonts-droid-fallback: Chinese, Japanese, Korean,
    /// which DejaVu lacks; it has no bold, so bold CJK is drawn regular).
    public static func systemDefault(bold: Bool = false) -> PDFFontChain {
        var fonts = [PDFFont.systemDefault(bold: bold)]
        if let fallback = PDFFont.cjkFallback { fonts.append(fallback) }
        return PDFFontChain(fonts)
    }

    /// Whether some font of the chain has `scalar`.
    public func hasGlyph(for scalar: Unicode.Scalar) -> Bool {
        fonts.contains { $0.hasGlyph(for: scalar) }
    }

    /// How far text of `size` points rises above the baseline, in points (the first font's).
    public func ascent(size: Double) -> Double { fonts[0].ascent(size: size) }

    /// How far text of `size` points reaches below the baseline, in points (the first font's).
    public func descent(size: Double) -> Double { fonts[0].descent(size: size) }

    /// The width of `text` at `size` points, in points, exactly as `PDFPage.drawText` draws it.
    public func width(of text: String, size: Double) -> Double {
        Double(layout(text).width) * size / 1000
    }

    // MARK: Layout

    /// Glyphs of one font, drawn one after the other.
    struct Run {
        /// Index in `fonts`.
        var font: Int
        var glyphs: [PDFFont.Glyph] = []
        /// The character each glyph stands for (for the ToUnicode map).
        var scalars: [Unicode.Scalar] = []
    }

    /// `text` as runs of glyphs, its width in thousandths of an em, and the characters no font had.
    struct Layout {
        var runs: [Run] = []
        var width = 0
        var missing: [Unicode.Scalar] = []

        mutating func append(_ glyph: PDFFont.Glyph, font: Int, for scalar: Unicode.Scalar) {
            if runs.last?.font != font { runs.append(Run(font: font)) }
            runs[runs.count - 1].glyphs.append(glyph)
            runs[runs.count - 1].scalars.append(scalar)
            width += glyph.width
        }
    }

    /// How `text` is drawn with this chain.
    func layout(_ text: String) -> Layout {
        var layout = Layout()
        for original in text.unicodeScalars {
            if (0x20...0x7E).contains(original.value), let found = ascii[Int(original.value) - 0x20] {
                layout.append(found.glyph, font: found.font, for: original)
                continue
            }
            var scalar = original
            if Self.drawnAsSpace(scalar) {
                scalar = " "
            } else if scalar.properties.generalCategory == .control || scalar.properties.isDefaultIgnorableCodePoint {
                continue
            }
            var found = false
            for (index, font) in fonts.enumerated() {
                if let glyph = font.glyph(for: scalar) {
                    layout.append(glyph, font: index, for: scalar)
                    found = true
                    break
                }
            }
            if !found {
                layout.missing.append(scalar)
                if let replacement { layout.append(replacement.glyph, font: replacement.font, for: replacement.scalar) }
            }
        }
        return layout
    }

    /// Tabs, line and paragraph breaks: drawn as one space each.
    private static func drawnAsSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x85, 0x2028, 0x2029: true
        default: false
        }
    }
}
