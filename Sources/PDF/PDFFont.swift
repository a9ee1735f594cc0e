#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A font text is drawn in: a TrueType file embedded as a subset (any script its glyphs cover),
/// or the standard Helvetica that every viewer has (WinAnsi characters only, nothing embedded).
///
/// Glyphs are drawn one per character with the font's advance widths: there is no shaping, no
/// kerning and no bidirectional reordering. Latin, Greek, Cyrillic, CJK and the like come out
/// right; Arabic and Indic letters come out in their isolated, unjoined forms, and right-to-left
/// text (Arabic, Hebrew) is drawn left to right in the order it is stored.
///
/// A font is immutable and may be shared by documents and threads; each document records which
/// glyphs it used and embeds only those.
public final class PDFFont: Sendable {
    enum Program: Sendable {
        case trueType(TrueTypeFont)
        case standard(StandardFont)
    }

    let program: Program

    private init(_ program: Program) {
        self.program = program
    }

    /// Loads the TrueType font (.ttf) at `path`.
    ///
    /// - Throws: `PDFError` `.cannotReadFont` when the file cannot be read, `.invalidFont` when
    ///   it is not a TrueType font with a Unicode character map (an OpenType/CFF .otf and a
    ///   .ttc collection are refused by name).
    public static func trueType(path: String) throws(PDFError) -> PDFFont {
        PDFFont(.trueType(try TrueTypeFont(data: try readFile(path), path: path)))
    }

    /// The largest font file read: CJK TrueType fonts run to some 30 MB.
    static let maximumFileSize = 128 << 20

    /// The whole file at `path`, with the system's reason when it cannot be read.
    private static func readFile(_ path: String) throws(PDFError) -> [UInt8] {
        func failure(_ code: Int32) -> PDFError {
            PDFError(kind: .cannotReadFont(errno: code), message: "cannot read font \(path): \(PDFOutput.describe(errno: code))")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(errno) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(errno)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            guard bytes.count <= maximumFileSize else {
                throw PDFError(kind: .invalidFont, message: "font \(path) is larger than \(maximumFileSize >> 20) MB")
            }
        }
    }

    /// Helvetica, or Helvetica-Bold: the standard font every viewer has, for when no TrueType
    /// file is available. It draws only the characters of WinAnsiEncoding (Windows-1252: ASCII,
    /// Western European letters, typographic quotes, dashes, €); anything else is drawn as "?"
    /// and reported missing.
    public static func helvetica(bold: Bool = false) -> PDFFont {
        bold ? helveticaBold : helveticaRegular
    }

    private static let helveticaRegular = PDFFont(.standard(.helvetica))
    private static let helveticaBold = PDFFont(.standard(.helveticaBold))

    /// Where Debian's fonts-dejavu-core puts DejaVu Sans.
    public static let dejaVuSansPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    /// Where Debian's fonts-dejavu-core puts DejaVu Sans Bold.
    public static let dejaVuSansBoldPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
    /// Debian's fonts-droid-fallback: a TrueType font with Chinese, Japanese and Korean.
    public static let cjkFallbackPath = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"

    /// DejaVu Sans (Bold) when Debian's fonts-dejavu-core is installed — Latin, Greek, Cyrillic,
    /// Armenian, Georgian, Hebrew, Arabic and many symbols, no CJK — else Helvetica (Bold).
    /// Reads the font file on every call: keep the font for the document's life.
    public static func systemDefault(bold: Bool = false) -> PDFFont {
        bold ? systemBold : systemRegular
    }

    /// The system's fonts, read once a process: a font is immutable (what a document uses of it
    /// is kept by the document), and Droid Sans Fallback alone is 4 MB to read and index.
    private static let systemRegular = (try? trueType(path: dejaVuSansPath)) ?? helvetica(bold: false)
    private static let systemBold = (try? trueType(path: dejaVuSansBoldPath)) ?? helvetica(bold: true)
    static let cjkFallback = try? trueType(path: cjkFallbackPath)

    /// The font's PostScript name ("DejaVuSans", "Helvetica").
    public var name: String {
        switch program {
        case .trueType(let font): font.postScriptName
        case .standard(let font): font.name
        }
    }

    /// The font is a file embedded in the document (false: a standard font the viewer supplies).
    public var isEmbedded: Bool {
        if case .trueType = program { return true }
        return false
    }

    /// Whether the font has a glyph for `scalar`.
    public func hasGlyph(for scalar: Unicode.Scalar) -> Bool {
        glyph(for: scalar) != nil
    }

    /// How far text of `size` points rises above the baseline, in points.
    public func ascent(size: Double) -> Double { Double(metrics.ascender) * size / 1000 }

    /// How far text of `size` points reaches below the baseline, in points (positive).
    public func descent(size: Double) -> Double { Double(-metrics.descender) * size / 1000 }

    /// The width of `text` drawn in this font alone at `size` points, in points; characters the
    /// font lacks are measured as the replacement drawn for them.
    public func width(of text: String, size: Double) -> Double {
        PDFFontChain(self).width(of: text, size: size)
    }

    // MARK: Glyphs

    /// One drawable glyph: the code written in the content stream (a glyph ID for TrueType, a
    /// WinAnsi byte for standard fonts) and its advance in thousandths of an em.
    struct Glyph: Sendable, Equatable {
        var code: UInt16
        var width: Int
    }

    /// The glyph for `scalar`, or nil when the font has none.
    func glyph(for scalar: Unicode.Scalar) -> Glyph? {
        switch program {
        case .trueType(let font):
            guard let glyph = font.glyph(for: scalar) else { return nil }
            return Glyph(code: glyph, width: font.width1000(of: glyph))
        case .standard(let font):
            guard let code = font.code(for: scalar) else { return nil }
            return Glyph(code: UInt16(code), width: font.width1000(of: code))
        }
    }

    /// Bytes per code in content-stream strings: 2 for Identity-H, 1 for WinAnsi.
    var bytesPerCode: Int {
        if case .trueType = program { return 2 }
        return 1
    }

    /// Ascender, descender, capital height and bounding box in thousandths of an em.
    var metrics: (ascender: Int, descender: Int, capHeight: Int, boundingBox: [Int]) {
        switch program {
        case .trueType(let font):
            (font.scaled(font.ascender), font.scaled(font.descender), font.scaled(font.capHeight), font.boundingBox.map(font.scaled))
        case .standard(let font):
            (font.ascender, font.descender, font.capHeight, font.boundingBox)
        }
    }
}
