import JPEG
import Proto

/// What stored bytes are, from their signature (and, for JPEG, the validated structure).
struct SniffedMedia: Sendable, Equatable {
    var mediaType: MediaType
    var contentType: String
    var width = 0
    var height = 0
    /// EXIF orientation 1...8 for JPEG; 0 when not an image with one.
    var orientation = 0
    /// A JPEG's extraneous bytes between marker segments, which decoders skip (`JPEGValidation`).
    var extraneousBytes = 0
    /// Their runs, and where the first starts.
    var extraneousRuns = 0, firstExtraneousOffset: Int?

    /// A line for the log when the JPEG has extraneous bytes; nil when it has none.
    func extraneousNote(key: String) -> String? {
        guard extraneousBytes > 0, let first = firstExtraneousOffset else { return nil }
        return "image \(key): its JPEG has \(extraneousBytes) extraneous bytes between marker segments in \(extraneousRuns) run(s), the first at offset \(first); decoders skip them, and so do renditions; stored as sent"
    }
}

/// Recognises JPEG (its whole structure validated, the header under a pixel limit), HEIC/AVIF,
/// and movies by their container signature (ISO BMFF/QuickTime, Matroska/WebM, AVI).
enum MediaSniffer {
    /// Bytes needed to classify by signature.
    static let headBytes = 64

    /// Classifies a container by its first bytes; nil for JPEG and anything unknown.
    static func container(_ head: ArraySlice<UInt8>) -> SniffedMedia? {
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

    /// Classifies whole data in place (an array, a request frame, a memory map): JPEG (its
    /// whole structure validated), HEIC or a movie. `maxDecodeBytes`: see `jpeg`.
    static func classify(_ data: some BlobBytes, maxPixels: Int, maxDecodeBytes: Int64 = .max) throws -> SniffedMedia {
        try data.withBlobBytes { buffer in try classify(buffer, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes) }
    }

    /// `classify` of bytes in place.
    static func classify(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxDecodeBytes: Int64 = .max
    ) throws(ImageStoreError) -> SniffedMedia {
        guard data.count > 0 else { throw .invalid("data is empty") }
        if JPEG.sniff(data) { return try jpeg(data, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes) }
        // The signatures are in the first bytes.
        let head = [UInt8](data.prefix(headBytes))
        if let media = container(head[...]) { return media }
        throw unrecognised(head[...])
    }

    /// Validates a whole JPEG in place: every segment wherever the frame header is, every
    /// scan's entropy-coded data, the EOI (`JPEG.validate`, at memory speed, no decode).
    ///
    /// Only an arithmetic-coded JPEG, whose data the structure cannot bound, is decoded as
    /// well (at 1/8 scale), under the render limit: a decode can hold a large buffer. One over
    /// `maxDecodeBytes` (the store's `maxRenditionSourceBytes`, which it could never be rendered
    /// past either) is refused before that decode: with extraneous bytes between segments the
    /// decode works on a copy of the whole file on the heap (`JPEG.withoutExtraneous`), and an
    /// upload may be 4 GiB, one per core at once; without them, the decode of that much
    /// arithmetic-coded data would hold a render slot for minutes.
    static func jpeg(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxDecodeBytes: Int64 = .max
    ) throws(ImageStoreError) -> SniffedMedia {
        let options = DecodeOptions(maxPixels: maxPixels)
        let validation: JPEGValidation
        do {
            validation = try JPEG.validate(data, options: options)
        } catch {
            throw describe(error)
        }
        if !validation.entropyDataChecked {
            guard Int64(data.count) <= maxDecodeBytes else {
                throw .invalid(
                    "data: arithmetic-coded JPEG of \(data.count) bytes is over the limit of \(maxDecodeBytes) bytes (--max-rendition-source-bytes): such a JPEG is decoded whole to be validated; store it Huffman-coded (jpegtran -optimize), or raise the limit")
            }
            ImageStore.renders.wait()
            defer { ImageStore.renders.signal() }
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
            extraneousRuns: validation.extraneousRuns, firstExtraneousOffset: validation.firstExtraneousOffset)
    }

    private static func describe(_ error: JPEGError) -> ImageStoreError {
        switch error.kind {
        case .tooManyPixels(let width, let height, let limit):
            return .invalid("data: JPEG of \(width)×\(height) = \(width * height) pixels is over the limit of \(limit) pixels")
        case .truncated:
            return .invalid("data: JPEG is truncated (\(error.message))")
        case .notJPEG:
            return .invalid("data is not a JPEG (\(error.message))")
        default:
            return .invalid("data: JPEG is damaged or unsupported (\(error.message))")
        }
    }

    static func unrecognised(_ head: ArraySlice<UInt8>) -> ImageStoreError {
        let hex = head.prefix(8).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined(separator: " ")
        return .invalid(
            "data is not a JPEG image or a known movie container (first bytes: \(hex)); accepted: JPEG, HEIC, MP4/MOV, Matroska/WebM, AVI")
    }
}
