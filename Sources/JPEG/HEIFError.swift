/// Why a HEIC/HEIF could not be read, or its thumbnails written.
public struct HEIFError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that answer each differently.
    public enum Kind: Sendable, Equatable {
        /// The bytes do not start with an `ftyp` box naming a HEIF brand.
        case notHEIF
        /// The data ends before the file does: a box, or an item's data, runs past its end.
        case truncated
        /// The data is damaged or breaks the format (boxes that do not parse, no primary image,
        /// coded data libde265 cannot decode), or uses what libheif cannot decode.
        case corrupt
        /// The primary image declares (its `ispe`) more pixels than `DecodeOptions.maxPixels`.
        case tooManyPixels(width: Int, height: Int, limit: Int)
        /// The primary image declares a picture whose decode holds (`HEIFHeader.decodedBytes`)
        /// more than `DecodeOptions.maxDecodedBytes`.
        case tooManyBytes(width: Int, height: Int, bytes: Int, limit: Int)
        /// TurboJPEG refused to compress a thumbnail.
        case encodeFailed
    }

    /// The kind of failure.
    public let kind: Kind
    /// What is wrong, for a person: libheif's own words when it said, and what was being done.
    public let message: String
    /// For a refusal by the limits, what was weighed when it was not the primary image's
    /// `ispe` (a grid's canvas, the picture an HEVC parameter set declares), in words; nil
    /// otherwise.
    public let measured: String?

    /// Creates an error from its parts.
    public init(kind: Kind, message: String, measured: String? = nil) {
        self.kind = kind
        self.message = message
        self.measured = measured
    }

    /// "HEIC is truncated: …", for a log or a job's error.
    public var description: String {
        let what = switch kind {
        case .notHEIF: "not a HEIC/HEIF"
        case .truncated: "truncated"
        case .corrupt: "damaged or unsupported"
        case .tooManyPixels: "over the pixel limit"
        case .tooManyBytes: "over the decoded-bytes limit"
        case .encodeFailed: "not made into a JPEG"
        }
        return "HEIC is \(what): \(message)"
    }
}
