/// Why a PNG could not be read, or its thumbnails written.
public struct PNGError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that answer each differently.
    public enum Kind: Sendable, Equatable {
        /// The bytes do not start with the PNG signature.
        case notPNG
        /// The data ends before the image does (inside a chunk, before IEND, or its image data
        /// too short for the size its header declares).
        case truncated
        /// A chunk's CRC does not match its type and data.
        case badChecksum
        /// The data is damaged or breaks the format (a bad IHDR, chunks out of order, a broken
        /// zlib stream or filter).
        case corrupt
        /// The header declares more pixels than `DecodeOptions.maxPixels` allows.
        case tooManyPixels(width: Int, height: Int, limit: Int)
        /// The header declares a picture whose decoded pixels (`PNGHeader.decodedBytes`) are
        /// over `DecodeOptions.maxDecodedBytes`: a decompression bomb, or too large to render.
        case tooManyBytes(width: Int, height: Int, bytes: Int, limit: Int)
        /// More chunks than `DecodeOptions.maxSegments`, or metadata (text, ICC profile, EXIF)
        /// that inflates past libspng's chunk limits.
        case overChunkLimits
        /// TurboJPEG refused to compress a thumbnail.
        case encodeFailed
    }

    /// The kind of failure.
    public let kind: Kind
    /// What is wrong, for a person: where in the file, and libspng's own words when it said.
    public let message: String

    /// Creates an error from its parts.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// "PNG is truncated: …", for a log or a job's error.
    public var description: String {
        let what = switch kind {
        case .notPNG: "not a PNG"
        case .truncated: "truncated"
        case .badChecksum: "damaged (a CRC does not match)"
        case .corrupt: "damaged or unsupported"
        case .tooManyPixels: "over the pixel limit"
        case .tooManyBytes: "over the decoded-bytes limit"
        case .overChunkLimits: "over the chunk limits"
        case .encodeFailed: "not made into a JPEG"
        }
        return "PNG is \(what): \(message)"
    }
}
