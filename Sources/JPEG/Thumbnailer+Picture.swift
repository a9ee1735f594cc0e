/// JPEG thumbnails of a picture decoded elsewhere (a movie's poster frame, `Movie`), by the
/// same resize and encode as a JPEG original's (`Thumbnailer.encode`): quality `quality`,
/// 4:2:0, no metadata.
extension Thumbnailer {
    /// The thumbnails of `picture`, already upright, at `sizes`, in that order. Throws a
    /// `JPEGError` only when TurboJPEG refuses to compress one.
    public func thumbnails(ofUpright picture: RGBImage, sizes: [Target]) throws(JPEGError) -> [Output] {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let plans = Self.plans(width: picture.width, height: picture.height, orientation: 1, sizes)
        return try encode(picture, plans: plans, sizes: sizes, gray: false, segments: [])
    }

    /// What `thumbnails(ofUpright:sizes:)` holds beside the picture for a picture of
    /// `width` × `height`: its largest size.
    public static func outputBytes(width: Int, height: Int, sizes: [Target]) -> Int {
        plans(width: width, height: height, orientation: 1, sizes).map { $0.size.width * $0.size.height * 3 }.max() ?? 0
    }
}
