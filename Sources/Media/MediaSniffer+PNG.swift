import Dispatch
import JPEG

/// PNG images (screenshots, scans), validated whole before they are stored: the chunk
/// structure and every CRC, the header's pixel and byte limits (before anything is inflated),
/// then a decode row by row that checks the image data (`PNG.validate`).
extension MediaSniffer {
    /// Validates a whole PNG in place. A PNG over `maxFileBytes` (the store's
    /// `maxRenditionSourceBytes`, past which it could never be rendered either) is refused
    /// before its decode, which holds one of `decodeSlots` (its memory is a row, its time the
    /// inflate's); one whose header declares more than `maxPixels` pixels, or a pixel buffer
    /// (width × height × 4) over `maxDecodedBytes`, before anything is inflated.
    public static func png(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxFileBytes: Int64 = .max,
        maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes, decodeSlots: DispatchSemaphore
    ) throws(MediaError) -> SniffedMedia {
        let options = DecodeOptions(maxPixels: maxPixels, maxDecodedBytes: maxDecodedBytes)
        // The header's limits first: a file claiming a huge picture is refused on its size
        // alone, whatever its length.
        do throws(PNGError) {
            _ = try PNG.header(of: data, options: options)
        } catch {
            throw describe(error)
        }
        guard Int64(data.count) <= maxFileBytes else {
            throw MediaError(
                "data: PNG of \(data.count) bytes is over the limit of \(maxFileBytes) bytes (--max-rendition-source-bytes): a PNG is decoded whole to be validated and rendered; raise the limit to store it")
        }
        decodeSlots.wait()
        defer { decodeSlots.signal() }
        let header: PNGHeader
        do throws(PNGError) {
            header = try PNG.validate(data, options: options)
        } catch {
            throw describe(error)
        }
        return SniffedMedia(mediaType: .image, contentType: "image/png", width: header.width, height: header.height)
    }

    /// The message a sender reads for a PNG refused.
    static func describe(_ error: PNGError) -> MediaError {
        switch error.kind {
        case .tooManyPixels(let width, let height, let limit):
            return MediaError(
                "data: PNG of \(width)×\(height) = \(width * height) pixels is over the limit of \(limit) pixels (--max-pixels)")
        case .tooManyBytes(let width, let height, let bytes, let limit):
            return MediaError(
                "data: PNG of \(width)×\(height) decodes to \(bytes) bytes of pixels (4 a pixel), over the limit of \(limit) bytes (--max-decoded-bytes): a decompression bomb, or a picture too large to render")
        case .truncated:
            return MediaError("data: PNG is truncated (\(error.message))")
        case .badChecksum:
            return MediaError("data: PNG is damaged: a CRC does not match (\(error.message))")
        case .overChunkLimits:
            return MediaError("data: PNG is over the chunk limits (\(error.message))")
        case .notPNG:
            return MediaError("data is not a PNG (\(error.message))")
        case .corrupt, .encodeFailed:
            return MediaError("data: PNG is damaged or unsupported (\(error.message))")
        }
    }
}
