/// Chroma subsampling when encoding.
public enum Subsampling: Sendable, Equatable {
    /// Full chroma resolution.
    case s444
    /// Half horizontal chroma resolution.
    case s422
    /// Half horizontal and vertical chroma resolution: smallest files, the usual choice for photos.
    case s420
    /// Luma only: a greyscale JPEG.
    case gray
}
