import Proto

/// What stored bytes are, from their signature (and, for JPEG, the validated structure).
public struct SniffedMedia: Sendable, Equatable {
    /// Image, movie or document.
    public var mediaType: MediaType
    /// The MIME type, e.g. "image/jpeg", "video/mp4", "application/pdf".
    public var contentType: String
    /// A JPEG's declared size, as stored (before orientation); a PNG's; a HEIC's as displayed
    /// (after its `irot`/`imir`, which its decode applies); 0 for anything else.
    public var width = 0, height = 0
    /// EXIF orientation 1...8 for JPEG; 0 when not an image with one.
    public var orientation = 0
    /// A JPEG's extraneous bytes between marker segments, which decoders skip (`JPEGValidation`).
    public var extraneousBytes = 0
    /// Their runs, and where the first starts.
    public var extraneousRuns = 0, firstExtraneousOffset: Int?
    /// When a JPEG was taken, from its EXIF (`EXIF.takenAt`: "2024-05-07T09:33:04+08:00"); ""
    /// when it has no valid DateTimeOriginal, and for anything else.
    public var takenAt = ""
}
