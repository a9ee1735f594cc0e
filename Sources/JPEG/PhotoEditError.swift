/// Why a photo edit could not be made: the edit asks for the impossible, or the JPEG could not
/// be read or written.
public struct PhotoEditError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that react differently to each.
    public enum Kind: Sendable, Equatable {
        /// The edit itself: an empty crop or one outside the upright image, a zoom, output
        /// size or quality out of range. The caller's mistake, not the photo's.
        case invalidEdit
        /// The original could not be read (not a JPEG, cut off, damaged, too many pixels,
        /// unsupported) or the output not written.
        case image(JPEGError)
        /// A HEIC original could not be read (`PhotoEditor.edit(heif:_:)`).
        case heif(HEIFError)
    }

    /// The kind of failure.
    public let kind: Kind
    /// What was wrong, naming the value: "zoom must be finite and in (0, 64] (got nan)".
    public let message: String

    /// Creates an error from its parts.
    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// An `.invalidEdit` saying `message`.
    init(invalid message: String) {
        self.init(kind: .invalidEdit, message: message)
    }

    /// The HEIC's error, in its words.
    init(heif error: HEIFError) {
        self.init(kind: .heif(error), message: error.message)
    }

    /// The JPEG's error, in its words.
    init(image error: JPEGError) {
        self.init(kind: .image(error), message: error.message)
    }

    /// "invalid photo edit: crop 10,10,0,20 is empty: …", or the JPEG error's own description.
    public var description: String {
        switch kind {
        case .invalidEdit: "invalid photo edit: \(message)"
        case .image(let error): error.description
        case .heif(let error): error.description
        }
    }
}
