import JPEG
import Media

extension ImageStore {
    /// What `data` is (`MediaSniffer.classify`), refused as INVALID_ARGUMENT; the decode that
    /// validates an arithmetic-coded JPEG or a PNG holds a render slot.
    static func classify(
        _ data: some BlobBytes, maxPixels: Int, maxDecodeBytes: Int64 = .max, maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes
    ) throws -> SniffedMedia {
        try data.withBlobBytes { buffer in
            try classify(buffer, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes, maxDecodedBytes: maxDecodedBytes)
        }
    }

    /// `classify` of bytes in place.
    static func classify(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxDecodeBytes: Int64 = .max,
        maxDecodedBytes: Int = DecodeOptions.defaultMaxDecodedBytes
    ) throws(ImageStoreError) -> SniffedMedia {
        try refusedAsInvalid { () throws(MediaError) in
            try MediaSniffer.classify(
                data, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes, maxDecodedBytes: maxDecodedBytes, decodeSlots: renders)
        }
    }

    /// A whole JPEG validated in place (`MediaSniffer.jpeg`), refused as INVALID_ARGUMENT.
    static func classifyJPEG(
        _ data: UnsafeRawBufferPointer, maxPixels: Int, maxDecodeBytes: Int64 = .max
    ) throws(ImageStoreError) -> SniffedMedia {
        try refusedAsInvalid { () throws(MediaError) in
            try MediaSniffer.jpeg(data, maxPixels: maxPixels, maxDecodeBytes: maxDecodeBytes, decodeSlots: renders)
        }
    }

    /// Refuses a document of `size` bytes over `limits.maxDocumentBytes` as RESOURCE_EXHAUSTED,
    /// as an upload over its limit is; `ending` is added to the message.
    static func checkSize(_ media: SniffedMedia, size: Int64, limits: ImageStoreLimits, ending: String = "") throws(ImageStoreError) {
        guard media.mediaType == .document, size > limits.maxDocumentBytes else { return }
        throw .tooLarge(
            "data: PDF of \(size) bytes is over the document limit of \(limits.maxDocumentBytes) bytes (--max-document-bytes)" + ending)
    }

    private static func refusedAsInvalid(_ body: () throws(MediaError) -> SniffedMedia) throws(ImageStoreError) -> SniffedMedia {
        do { return try body() } catch { throw .invalid(error.message) }
    }
}

extension SniffedMedia {
    /// A line for the log when the JPEG has extraneous bytes; nil when it has none.
    func extraneousNote(key: String) -> String? {
        guard extraneousBytes > 0, let first = firstExtraneousOffset else { return nil }
        return "image \(key): its JPEG has \(extraneousBytes) extraneous bytes between marker segments in \(extraneousRuns) run(s), the first at offset \(first); decoders skip them, and so do renditions; stored as sent"
    }
}
