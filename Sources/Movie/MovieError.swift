/// Why no poster frame was taken from a movie: each a different thing wrong with the movie (or
/// a limit it is over), with a message that names it, the limit and what to change.
public struct MovieError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that answer each differently.
    public enum Kind: Sendable, Equatable {
        /// Not a container posters are made from (`Movie.container`): ISO BMFF/QuickTime
        /// (MP4, MOV, 3GP) and Matroska/WebM are; AVI and anything else are not.
        case unsupportedContainer
        /// The container does not parse (no index: a movie cut short before its `moov` box,
        /// random bytes behind a valid first box).
        case damaged
        /// The container's index names samples past the end of the data: a movie cut short.
        case truncated
        /// The movie has no video stream (audio only, or only a cover picture).
        case noVideoStream
        /// The first video stream's codec is not one posters are decoded from
        /// (`Movie.decoders`).
        case unsupportedCodec(String)
        /// The video's coded size is over `MovieLimits.maxPixels` (or not given).
        case tooManyPixels(width: Int, height: Int, limit: Int)
        /// Finding the poster read more packets, decoded more frames, read more bytes or took
        /// longer than `MovieLimits` allows.
        case overLimit
        /// Opening the container read more than `MovieLimits.maxIndexBytes` (`limit`) before its
        /// index was whole: an index (an MP4's `moov`) the demuxer would hold in memory larger
        /// than allowed, or that much before it.
        case indexOverLimit(limit: Int64)
        /// The movie's bytes could not be read from where it is kept (a ranged read of a
        /// `RangedMovieSource` failed): nothing is known to be wrong with the movie.
        case unreadable
        /// No frame decoded: every packet read was refused by the decoder, or there was none.
        case noFrame
        /// TurboJPEG refused to compress a thumbnail of the poster.
        case encodeFailed
        /// FFmpeg's libraries are not installed where this process runs: they are loaded when
        /// the first poster is made (`homepwner_av_load`), not linked.
        case decoderMissing
    }

    /// The kind of failure.
    public let kind: Kind
    /// What is wrong, for a person: the part of the movie, the figure and the limit.
    public let message: String

    /// Creates an error from its parts.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// "movie is truncated: …", for a log or a job's error.
    public var description: String {
        let what = switch kind {
        case .unsupportedContainer: "in a container posters are not made from"
        case .damaged: "damaged"
        case .truncated: "truncated"
        case .noVideoStream: "without a video stream"
        case .unsupportedCodec: "in a codec posters are not decoded from"
        case .tooManyPixels: "over the pixel limit"
        case .overLimit: "over a poster limit"
        case .indexOverLimit: "over the index limit"
        case .unreadable: "not readable"
        case .noFrame: "without a decodable frame"
        case .encodeFailed: "not made into a JPEG"
        case .decoderMissing: "not decoded here"
        }
        return "movie is \(what): \(message)"
    }
}
