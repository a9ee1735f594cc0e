import Proto

/// PDF documents (receipts, manuals), recognised by their header and their trailer only: a PDF
/// is stored and served as bytes and never rendered, so nothing reads its objects.
///
/// The header must be at offset 0: `%PDF-` and a version ISO 32000 defines, `1.0`…`1.7` or
/// `2.0`, not followed by another digit. Readers such as Acrobat look for it anywhere in the
/// first 1024 bytes; requiring it first keeps PDFs and JPEGs (which start `FF D8 FF`) apart, so
/// no bytes are both and none can choose which check they get. The end-of-file marker `%%EOF`
/// must be in the last `pdfTrailerBytes`, where readers look for it: a PDF cut short lacks it.
extension MediaSniffer {
    /// What a PDF starts with.
    public static let pdfSignature: [UInt8] = Array("%PDF-".utf8)
    /// A PDF's `%%EOF` is within this many bytes of its end.
    public static let pdfTrailerBytes = 1024
    /// The versions a PDF header may name.
    public static let pdfVersions: Set<String> = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "2.0"]

    private static let pdfEndMarker: [UInt8] = Array("%%EOF".utf8)

    /// Whether `head` starts as a PDF does (`%PDF-`); `pdf(head:tail:)` then decides.
    public static func startsAsPDF(_ head: some Collection<UInt8>) -> Bool {
        head.starts(with: pdfSignature)
    }

    /// Checks a PDF by its ends: `head`, its first bytes (`headBytes` of them, or all it has),
    /// and `tail`, its last `pdfTrailerBytes` (or all it has; they may overlap `head`).
    public static func pdf(head: some Collection<UInt8>, tail: some Collection<UInt8>) throws(MediaError) -> SniffedMedia {
        let head = Array(head.prefix(headBytes))
        guard startsAsPDF(head) else { throw MediaError("data is not a PDF (it does not start with %PDF-)") }
        let version = Array(head.dropFirst(pdfSignature.count).prefix(3))
        let after = head.dropFirst(pdfSignature.count + 3).first
        let isDigitOrDot = { (byte: UInt8) in (0x30...0x39).contains(byte) || byte == 0x2E }
        guard pdfVersions.contains(String(decoding: version, as: UTF8.self)), !(after.map(isDigitOrDot) ?? false) else {
            throw MediaError(
                "data: PDF header \"\(headerLine(head))\" names no PDF version (accepted: %PDF-1.0 to %PDF-1.7, %PDF-2.0)")
        }
        let tail = Array(tail.suffix(pdfTrailerBytes))
        guard contains(tail, pdfEndMarker) else {
            throw MediaError("data: PDF is truncated: no %%EOF marker in its last \(pdfTrailerBytes) bytes")
        }
        return SniffedMedia(mediaType: .document, contentType: "application/pdf")
    }

    /// The header's first line, at most 16 bytes, for a message: printable ASCII as it is, any
    /// other byte as `\xNN`.
    private static func headerLine(_ head: [UInt8]) -> String {
        head.prefix(16).prefix { $0 != 0x0A && $0 != 0x0D }.map { byte in
            (0x20...0x7E).contains(byte) && byte != 0x22 && byte != 0x5C
                ? String(UnicodeScalar(byte)) : "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }

    private static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
