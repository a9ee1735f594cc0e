import Dispatch
import JPEG

/// HEIC/HEIF photos, validated whole before they are stored: the boxes parsed and the primary
/// image's coded size checked against the pixel and decoded-byte limits (before any pixel is
/// decoded), then a decode of the primary image that reads all its coded data (`HEIF.validate`).
extension MediaSniffer {
    /// Validates a whole HEIC in place. One whose primary image declares more than `maxPixels`
    /// pixels, or whose decode would hold more than `maxDecodedBytes`, is refused from its
    /// boxes; one over `maxFileBytes` (the store's `maxRenditionSourceBytes`, past which it
    /// could never be rendered either) before its decode, which holds one of `decodeSlots`.
    /// Its width and height are as displayed (upright: libheif applies `irot`/`imir`), so its
    /// orientation is 1; `takenAt` is its `Exif` item's DateTimeOriginal.
    public static func heif(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxFileBytes: Int64 = .max,
        maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes, decodeSlots: DispatchSemaphore
    ) throws(MediaError) -> SniffedMedia {
        let options = DecodeOptions(maxPixels: maxPixels, maxDecodedBytes: maxDecodedBytes)
        do throws(HEIFError) {
            _ = try HEIF.header(of: data, options: options)
        } catch {
            throw describe(error)
        }
        guard Int64(data.count) <= maxFileBytes else {
            throw MediaError(
                "data: HEIC of \(data.count) bytes is over the limit of \(maxFileBytes) bytes (--max-rendition-source-bytes): a HEIC is decoded whole to be validated and rendered; raise the limit to store it")
        }
        decodeSlots.wait()
        defer { decodeSlots.signal() }
        let header: HEIFHeader
        do throws(HEIFError) {
            header = try HEIF.validate(data, options: options)
        } catch {
            throw describe(error)
        }
        return SniffedMedia(
            mediaType: .image, contentType: "image/heic", width: header.width, height: header.height,
            takenAt: HEIF.takenAt(in: data, options: options) ?? "")
    }

    /// width × height as a number, or "more than 2⁶³" for a grid's 32-bit sizes whose product
    /// does not fit.
    static func pixelCount(_ width: Int, _ height: Int) -> String {
        let (count, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? "more than 2⁶³" : String(count)
    }

    /// The message a sender reads for a HEIC refused.
    static func describe(_ error: HEIFError) -> MediaError {
        // What was weighed, when not its ispe: "HEIC of 64759×65527" would read as the photo's size.
        let weighed = error.measured.map { " (\($0))" } ?? ""
        switch error.kind {
        case .tooManyPixels(let width, let height, let limit):
            return MediaError(
                "data: HEIC of \(width)×\(height) = \(pixelCount(width, height)) pixels is over the limit of \(limit) pixels (--max-pixels)\(weighed)")
        case .tooManyBytes(let width, let height, let bytes, let limit):
            return MediaError(
                "data: HEIC of \(width)×\(height) needs \(bytes) bytes to decode (\(bytes / (width * height)) a pixel), over the limit of \(limit) bytes (--max-decoded-bytes): a picture too large to render\(weighed)")
        case .truncated:
            return MediaError("data: HEIC is truncated (\(error.message))")
        case .notHEIF:
            return MediaError("data is not a HEIC (\(error.message))")
        case .corrupt, .encodeFailed:
            return MediaError("data: HEIC is damaged or unsupported (\(error.message))")
        }
    }
}
