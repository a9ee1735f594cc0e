import JPEG
import Proto

/// What stored bytes are, from their signature (and, for JPEG, the validated header).
struct SniffedMedia: Sendable, Equatable {
    var mediaType: MediaType
    var contentType: String
    var width = 0
    var height = 0
    /// EXIF orientation 1...8 for JPEG; 0 when not an image with one.
    var orientation = 0
}

/// Recognises JPEG (header validated with TurboJPEG under a pixel limit), HEIC/AVIF, and movies by
/// their container signature (ISO BMFF/QuickTime, Matroska/WebM, AVI).
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

    /// Classifies whole data: JPEG (header validated, ending checked), HEIC or a movie.
    static func classify(_ data: [UInt8], maxPixels: Int) throws(ImageStoreError) -> SniffedMedia {
        guard !data.isEmpty else { throw .invalid("data is empty") }
        if JPEG.sniff(data) { return try jpeg(head: data, tail: data.suffix(2048), whole: { data }, maxPixels: maxPixels) }
        if let media = container(data[...]) { return media }
        throw unrecognised(data[...])
    }

    /// Classifies whole data read in place: the JPEG header is read from the first 4 MiB (as
    /// for uploads), so only an unusual JPEG (no EOI at the end) is copied whole.
    static func classify(_ data: some BlobBytes, maxPixels: Int) throws -> SniffedMedia {
        if let array = data as? [UInt8] { return try classify(array, maxPixels: maxPixels) }
        guard data.count > 0 else { throw ImageStoreError.invalid("data is empty") }
        // The signatures are in the first bytes; only a JPEG needs more (its header segments).
        let start = try data.withBlobBytes { [UInt8]($0.prefix(64)) }
        if JPEG.sniff(start) {
            let (head, tail) = try data.withBlobBytes { buffer in
                ([UInt8](buffer.prefix(4 << 20)), [UInt8](buffer.suffix(2048)))
            }
            return try jpeg(head: head, tail: tail[...], whole: { data.array }, maxPixels: maxPixels)
        }
        if let media = container(start[...]) { return media }
        throw unrecognised(start[...])
    }

    /// Validates a JPEG from its first bytes (header and EXIF) and its last bytes (the EOI
    /// marker); when the end does not show EOI it decodes `whole()` to be sure it is complete.
    static func jpeg(
        head: [UInt8], tail: ArraySlice<UInt8>, whole: () throws -> [UInt8], maxPixels: Int
    ) throws(ImageStoreError) -> SniffedMedia {
        let header: JPEGHeader
        do {
            header = try JPEG.header(of: head, options: DecodeOptions(maxPixels: maxPixels))
        } catch {
            throw describe(error)
        }
        // Entropy-coded data never contains FF D9, so an EOI near the end means the scan is complete.
        if !endsWithEOI(tail) {
            do {
                _ = try JPEG.decode(try whole(), targetSize: (1, 1), options: DecodeOptions(maxPixels: maxPixels))
            } catch let error as JPEGError {
                throw describe(error)
            } catch {
                throw .invalid("JPEG could not be read: \(error)")
            }
        }
        return SniffedMedia(
            mediaType: .image, contentType: "image/jpeg", width: header.width, height: header.height,
            orientation: header.orientation)
    }

    private static func endsWithEOI(_ tail: ArraySlice<UInt8>) -> Bool {
        var index = tail.endIndex - 1
        while index > tail.startIndex {
            if tail[index - 1] == 0xFF, tail[index] == 0xD9 { return true }
            index -= 1
        }
        return false
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
