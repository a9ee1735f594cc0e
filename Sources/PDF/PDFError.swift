/// Why a PDF could not be written, or an image or font could not be used in one.
public struct PDFError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that react differently to each.
    public enum Kind: Sendable, Equatable {
        /// The output file could not be created (`errno` is the system's code).
        case cannotCreate(errno: Int32)
        /// Writing to the output failed (`errno` is the system's code, 0 when a `FileHandle` threw).
        case writeFailed(errno: Int32)
        /// The bytes given as a JPEG are not one: empty, garbage, cut short or zero-sized.
        case invalidJPEG
        /// A real JPEG that PDF's DCTDecode cannot show (12-bit, lossless, arithmetic-coded, 2 components).
        case unsupportedJPEG
        /// The font file could not be read.
        case cannotReadFont(errno: Int32)
        /// The font file is not a TrueType font this writer can embed.
        case invalidFont
    }

    /// The kind of failure.
    public let kind: Kind
    /// What went wrong, naming the path, the offset or the value: a sentence a person can act on.
    public let message: String

    /// Creates an error from its parts.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message alone: it already names what failed.
    public var description: String { message }
}
