import Dispatch
import JPEG
import Proto

/// Recognises JPEG (its whole structure validated, the header under a pixel limit), PNG
/// (validated whole, `MediaSniffer+PNG.swift`), HEIC (validated whole, `MediaSniffer+HEIF.swift`), AVIF,
/// PDF documents by their header and trailer (`MediaSniffer+PDF.swift`), and movies by their
/// container signature (ISO BMFF/QuickTime, Matroska/WebM, AVI).
public enum MediaSniffer {
    /// Bytes needed to classify by signature.
    public static let headBytes = 64

    /// Classifies a container by its first bytes; nil for JPEG, PNG, PDF and anything unknown.
    /// A HEIC is named by its brand here; `classify` validates it whole first.
    public static func container(_ head: ArraySlice<UInt8>) -> SniffedMedia? {
        let head = Array(head.prefix(headBytes))
        func ascii(_ range: Range<Int>) -> String {
            guard range.upperBound <= head.count else { return "" }
            return String(decoding: head[range], as: UTF8.self)
        }
        if ascii(4..<8) == "ftyp" {
            let brand = ascii(8..<12)
            switch brand {
            case "heic", "heix", "heim", "heis", "mif1", "msf1":
                return SniffedMedia(mediaType: .image, contentType: "image/heic")
            case "avif", "avis":
                return SniffedMedia(mediaType: .image, contentType: "image/avif")
            case "qt  ":
                return SniffedMedia(mediaType: .movie, contentType: "video/quicktime")
            case "3gp4", "3gp5", "3gp6", "3g2a":
                return SniffedMedia(mediaType: .movie, contentType: "video/3gpp")
            default:
                return SniffedMedia(mediaType: .movie, contentType: "video/mp4")
            }
        }
        // QuickTime files may start with other atoms before ftyp.
        if ["moov", "mdat", "wide", "free", "skip"].contains(ascii(4..<8)) {
            return SniffedMedia(mediaType: .movie, contentType: "video/quicktime")
        }
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) {
            let isWebM = String(decoding: head, as: UTF8.self).contains("webm")
            return SniffedMedia(mediaType: .movie, contentType: isWebM ? "video/webm" : "video/x-matroska")
        }
        if ascii(0..<4) == "RIFF", ascii(8..<12) == "AVI " {
            return SniffedMedia(mediaType: .movie, contentType: "video/x-msvideo")
        }
        return nil
    }

    /// `classify` of an array.
    public static func classify(
        _ data: [UInt8], maxPixels: Int, maxDecodeBytes: Int64 = .max,
        maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes, decodeSlots: DispatchSemaphore
    ) throws(MediaError) -> SniffedMedia {
        let result = data.withUnsafeBytes { buffer in
            Result { () throws(MediaError) in
                try classify(
                    buffer, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes, maxDecodedBytes: maxDecodedBytes,
                    decodeSlots: decodeSlots)
            }
        }
        return try result.get()
    }

    /// Classifies whole data in place (a request frame, a memory map): JPEG (its whole
    /// structure validated), PNG and HEIC (validated whole), a PDF (its header and trailer),
    /// or a movie. `maxDecodeBytes`, `decodeSlots`: see `jpeg` (for a PNG or a HEIC, the most
    /// bytes it may have, `png`'s and `heif`'s `maxFileBytes`); `maxDecodedBytes`: see `png`
    /// and `heif`.
    public static func classify(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxDecodeBytes: Int64 = .max,
        maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes, decodeSlots: DispatchSemaphore
    ) throws(MediaError) -> SniffedMedia {
        guard data.count > 0 else { throw MediaError("data is empty") }
        if JPEG.sniff(data) {
            return try jpeg(data, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes, decodeSlots: decodeSlots)
        }
        if PNG.sniff(data) {
            return try png(
                data, maxPixels: maxPixels, maxFileBytes: maxDecodeBytes, maxDecodedBytes: maxDecodedBytes, decodeSlots: decodeSlots)
        }
        if HEIF.sniff(data) {
            return try heif(
                data, maxPixels: maxPixels, maxFileBytes: maxDecodeBytes, maxDecodedBytes: maxDecodedBytes, decodeSlots: decodeSlots)
        }
        if startsAsPDF(data.prefix(pdfSignature.count)) {
            return try pdf(head: data.prefix(headBytes), tail: data.suffix(pdfTrailerBytes))
        }
        // The signatures are in the first bytes.
        let head = [UInt8](data.prefix(headBytes))
        if let media = container(head[...]) { return media }
        throw unrecognised(head[...])
    }

    /// Validates a whole JPEG in place: every segment wherever the frame header is, every
    /// scan's entropy-coded data, the EOI (`JPEG.validate`, at memory speed, no decode); reads
    /// its orientation and when it was taken (`EXIF.takenAt`) from its EXIF.
    ///
    /// Only an arithmetic-coded JPEG, whose data the structure cannot bound, is decoded as
    /// well (at 1/8 scale), under the render limit: a decode can hold a large buffer. One over
    /// `maxDecodeBytes` (the store's `maxRenditionSourceBytes`, which it could never be rendered
    /// past either) is refused before that decode: with extraneous bytes between segments the
    /// decode works on a copy of the whole file on the heap (`JPEG.withoutExtraneous`), and an
    /// upload may be 4 GiB, one per core at once; without them, the decode of that much
    /// arithmetic-coded data would hold a render slot for minutes.
    ///
    /// - Parameter decodeSlots: the caller's bound on concurrent decodes (each can hold a large
    ///   pixel buffer), waited on for that decode; block only a thread that may wait.
    public static func jpeg(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxDecodeBytes: Int64 = .max, decodeSlots: DispatchSemaphore
    ) throws(MediaError) -> SniffedMedia {
        let options = DecodeOptions(maxPixels: maxPixels)
        let validation: JPEGValidation
        do {
            validation = try JPEG.validate(data, options: options)
        } catch {
            throw describe(error)
        }
        if !validation.entropyDataChecked {
            guard Int64(data.count) <= maxDecodeBytes else {
                throw MediaError(
                    "data: arithmetic-coded JPEG of \(data.count) bytes is over the limit of \(maxDecodeBytes) bytes (--max-rendition-source-bytes): such a JPEG is decoded whole to be validated; store it Huffman-coded (jpegtran -optimize), or raise the limit")
            }
            decodeSlots.wait()
            defer { decodeSlots.signal() }
            do {
                _ = try JPEG.decode(data, targetSize: (1, 1), options: options)
            } catch {
                throw describe(error)
            }
        }
        let header = validation.header
        return SniffedMedia(
            mediaType: .image, contentType: "image/jpeg", width: header.width, height: header.height,
            orientation: header.orientation, extraneousBytes: validation.extraneousBytes,
            extraneousRuns: validation.extraneousRuns, firstExtraneousOffset: validation.firstExtraneousOffset,
            // The header's segments again, up to the first Exif APP1: the bytes validate just read.
            takenAt: EXIF.takenAt(in: data) ?? "")
    }

    private static func describe(_ error: JPEGError) -> MediaError {
        switch error.kind {
        case .tooManyPixels(let width, let height, let limit):
            return MediaError("data: JPEG of \(width)×\(height) = \(width * height) pixels is over the limit of \(limit) pixels")
        case .truncated:
            return MediaError("data: JPEG is truncated (\(error.message))")
        case .notJPEG:
            return MediaError("data is not a JPEG (\(error.message))")
        default:
            return MediaError("data: JPEG is damaged or unsupported (\(error.message))")
        }
    }

    private static func unrecognised(_ head: ArraySlice<UInt8>) -> MediaError {
        let hex = head.prefix(8).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined(separator: " ")
        return MediaError(
            "data is not a JPEG or PNG image, a PDF document or a known movie container (first bytes: \(hex)); accepted: JPEG, PNG, HEIC, PDF, MP4/MOV, Matroska/WebM, AVI")
    }
}
