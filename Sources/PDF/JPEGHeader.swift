/// What a PDF needs to know about a JPEG to embed it unchanged as a DCTDecode image: its
/// frame header (SOF0, SOF1 or SOF2), whether an Adobe APP14 segment marks inverted CMYK,
/// and its EXIF orientation.
///
/// The walk is over marker segments only, by their lengths: extraneous bytes between
/// segments, which libjpeg skips with a warning and every viewer opens, are skipped the same
/// way. The entropy-coded data is not decoded; it must be followed by an EOI marker, so a
/// file cut short inside its scans is refused.
struct JPEGHeader: Sendable, Equatable {
    /// Pixels across.
    var width: Int
    /// Pixels down.
    var height: Int
    /// Bits per sample (8: the only depth DCTDecode takes).
    var bitsPerComponent: Int
    /// 1 (grey), 3 (YCbCr/RGB) or 4 (CMYK/YCCK).
    var components: Int
    /// An APP14 "Adobe" segment was seen: for 4 components the samples are inverted.
    var adobe: Bool
    /// The EXIF orientation (1…8); 1 when there is none.
    var orientation: Int
    /// SOF2: progressive.
    var progressive: Bool

    /// Reads the header of `bytes`.
    static func parse(_ bytes: [UInt8]) throws(PDFError) -> JPEGHeader {
        func invalid(_ message: String) -> PDFError { PDFError(kind: .invalidJPEG, message: "invalid JPEG: " + message) }
        func unsupported(_ message: String) -> PDFError { PDFError(kind: .unsupportedJPEG, message: "unsupported JPEG: " + message) }

        guard !bytes.isEmpty else { throw invalid("the data is empty (0 bytes)") }
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else {
            let start = bytes.prefix(4).map { PDFSyntax.hex([$0]) }.joined(separator: " ")
            throw invalid("\(bytes.count) bytes that do not start with the SOI marker FF D8 (they start \(start))")
        }
        var header: JPEGHeader?
        var adobe = false
        var orientation = 1
        var index = 2
        while true {
            // Find the next marker: skip extraneous bytes, fill bytes and FF 00 pairs.
            while index < bytes.count, bytes[index] != 0xFF { index += 1 }
            while index < bytes.count, bytes[index] == 0xFF { index += 1 }
            guard index < bytes.count else {
                throw invalid("the data ends at byte \(bytes.count) before \(header == nil ? "a frame header (SOF)" : "the first scan (SOS)"): the file is cut short")
            }
            let marker = bytes[index]
            let markerOffset = index - 1
            index += 1
            switch marker {
            case 0x00, 0x01, 0xD0...0xD7:
                continue
            case 0xD8:
                throw invalid("a second SOI marker at byte \(markerOffset)")
            case 0xD9:
                throw invalid("an EOI marker at byte \(markerOffset) before \(header == nil ? "any frame header (SOF)" : "any scan (SOS)")")
            default:
                break
            }
            guard index + 2 <= bytes.count else {
                throw invalid("the data ends inside the length of the FF \(PDFSyntax.hex([marker])) segment at byte \(markerOffset): the file is cut short")
            }
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            guard length >= 2 else {
                throw invalid("the FF \(PDFSyntax.hex([marker])) segment at byte \(markerOffset) has length \(length) (at least 2)")
            }
            guard index + length <= bytes.count else {
                throw invalid(
                    "the FF \(PDFSyntax.hex([marker])) segment at byte \(markerOffset) is \(length) bytes long but only \(bytes.count - index) remain: the file is cut short")
            }
            let payload = index + 2..<index + length
            index += length
            switch marker {
            case 0xC0, 0xC1, 0xC2:
                guard header == nil else { throw invalid("a second frame header at byte \(markerOffset)") }
                header = try frame(bytes, payload, marker: marker, offset: markerOffset)
            case 0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                let kinds: [UInt8: String] = [
                    0xC3: "lossless", 0xC5: "differential (hierarchical)", 0xC6: "differential progressive (hierarchical)",
                    0xC7: "differential lossless (hierarchical)", 0xC9: "arithmetic-coded", 0xCA: "arithmetic-coded progressive",
                    0xCB: "arithmetic-coded lossless", 0xCD: "differential arithmetic-coded", 0xCE: "differential arithmetic-coded progressive",
                    0xCF: "differential arithmetic-coded lossless",
                ]
                throw unsupported(
                    "its frame header SOF\(marker - 0xC0) at byte \(markerOffset) is \(kinds[marker] ?? "unknown") coding; PDF viewers show baseline and progressive Huffman JPEGs only")
            case 0xEE:
                if payload.count >= 5, Array(bytes[payload.prefix(5)]) == Array("Adobe".utf8) { adobe = true }
            case 0xE1:
                if let value = exifOrientation(bytes, payload) { orientation = value }
            case 0xDA:
                guard var header else { throw invalid("a scan (SOS) at byte \(markerOffset) before any frame header (SOF)") }
                guard hasEndOfImage(bytes, after: index) else {
                    throw invalid("no EOI marker (FF D9) after the scan data that starts at byte \(index) of \(bytes.count): the file is cut short")
                }
                header.adobe = adobe
                header.orientation = orientation
                return header
            default:
                continue
            }
        }
    }

    /// The SOF segment's fields, checked for what DCTDecode can show.
    private static func frame(_ bytes: [UInt8], _ payload: Range<Int>, marker: UInt8, offset: Int) throws(PDFError) -> JPEGHeader {
        guard payload.count >= 6 else {
            throw PDFError(kind: .invalidJPEG, message: "invalid JPEG: the frame header at byte \(offset) is \(payload.count + 2) bytes (at least 8)")
        }
        let start = payload.lowerBound
        let bits = Int(bytes[start])
        let height = Int(bytes[start + 1]) << 8 | Int(bytes[start + 2])
        let width = Int(bytes[start + 3]) << 8 | Int(bytes[start + 4])
        let components = Int(bytes[start + 5])
        guard payload.count >= 6 + 3 * components else {
            throw PDFError(
                kind: .invalidJPEG,
                message: "invalid JPEG: the frame header at byte \(offset) declares \(components) components but is only \(payload.count + 2) bytes")
        }
        guard width > 0 else { throw PDFError(kind: .invalidJPEG, message: "invalid JPEG: the frame header at byte \(offset) gives a width of 0 pixels") }
        guard height > 0 else {
            throw PDFError(
                kind: .invalidJPEG,
                message: "invalid JPEG: the frame header at byte \(offset) gives a height of 0 pixels (a height set later by a DNL marker is not supported)")
        }
        guard bits == 8 else {
            throw PDFError(kind: .unsupportedJPEG, message: "unsupported JPEG: \(bits)-bit samples; PDF's DCTDecode takes 8-bit JPEGs only")
        }
        guard [1, 3, 4].contains(components) else {
            throw PDFError(
                kind: .unsupportedJPEG, message: "unsupported JPEG: \(components) colour components; PDF takes 1 (grey), 3 (RGB) or 4 (CMYK)")
        }
        return JPEGHeader(
            width: width, height: height, bitsPerComponent: bits, components: components, adobe: false, orientation: 1,
            progressive: marker == 0xC2)
    }

    /// An EOI marker somewhere after `start`. Searched from the end, where it almost always
    /// is; data after it (a second image, trailing junk) is left as it is.
    private static func hasEndOfImage(_ bytes: [UInt8], after start: Int) -> Bool {
        var index = bytes.count - 2
        while index >= start {
            if bytes[index] == 0xFF, bytes[index + 1] == 0xD9 { return true }
            index -= 1
        }
        return false
    }

    /// The Orientation tag (0x0112) of IFD0 in an APP1 "Exif" payload, when it is 1…8.
    private static func exifOrientation(_ bytes: [UInt8], _ payload: Range<Int>) -> Int? {
        guard payload.count >= 14, Array(bytes[payload.prefix(6)]) == [0x45, 0x78, 0x69, 0x66, 0, 0] else { return nil }
        let tiff = payload.lowerBound + 6
        let end = payload.upperBound
        let little: Bool
        switch (bytes[tiff], bytes[tiff + 1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= tiff, at + 2 <= end else { return nil }
            let a = Int(bytes[at]), b = Int(bytes[at + 1])
            return little ? a | b << 8 : a << 8 | b
        }
        func u32(_ at: Int) -> Int? {
            guard let first = u16(at), let second = u16(at + 2) else { return nil }
            return little ? first | second << 16 : first << 16 | second
        }
        guard let ifd = u32(tiff + 4), let count = u16(tiff + ifd) else { return nil }
        for entry in 0..<count {
            let at = tiff + ifd + 2 + entry * 12
            guard let tag = u16(at) else { return nil }
            guard tag == 0x0112 else { continue }
            // SHORT (type 3), count 1: the value sits in the first two bytes of the value field.
            guard u16(at + 2) == 3, let value = u16(at + 8), (1...8).contains(value) else { return nil }
            return value
        }
        return nil
    }
}
