/// Why a JPEG could not be read or written.
public struct JPEGError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that react differently to each.
    public enum Kind: Sendable, Equatable {
        /// The bytes do not start with a JPEG SOI marker (FF D8 FF).
        case notJPEG
        /// The data ends before the image does.
        case truncated
        /// The data is damaged (bad markers, bad Huffman codes, extraneous bytes).
        case corrupt
        /// The header declares more pixels than `DecodeOptions.maxPixels` allows.
        case tooManyPixels(width: Int, height: Int, limit: Int)
        /// A valid JPEG this build cannot handle (e.g. 12-bit, lossless, arithmetic, odd sampling).
        case unsupported(String)
        /// TurboJPEG refused to compress.
        case encodeFailed
    }

    /// The kind of failure.
    public let kind: Kind
    /// A human-readable detail, usually TurboJPEG's own message.
    public let message: String

    /// Creates an error from its parts.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// "JPEG truncated: Premature end of JPEG file".
    public var description: String { "JPEG \(kind): \(message)" }
}
