import JPEG

/// JPEG thumbnails of a movie: its poster frame (`Movie.poster`), upright, made into
/// thumbnails exactly as a JPEG original's (`Thumbnailer.thumbnails(ofUpright:sizes:)`).
extension Thumbnailer {
    /// The limits a movie's poster is found within: the thumbnailer's pixel limit, the rest
    /// `MovieLimits`' defaults.
    public var movieLimits: MovieLimits { MovieLimits(maxPixels: options.maxPixels) }

    /// The thumbnails of `movie` at `sizes`, in that order, from its poster frame.
    public func thumbnails(ofMovie movie: [UInt8], sizes: [Target], limits: MovieLimits? = nil) throws(MovieError) -> [Output] {
        let poster = try Movie.poster(of: movie, limits: limits ?? movieLimits)
        do throws(JPEGError) {
            return try thumbnails(ofUpright: poster.image, sizes: sizes)
        } catch {
            throw MovieError(.encodeFailed, "its poster could not be encoded as JPEG: \(error.message)")
        }
    }

    /// About the most memory `thumbnails(ofMovie:sizes:)` holds for `movie`, from its headers
    /// alone: the decoder's frames (about ten: the references a phone's H.264 or HEVC keeps and
    /// the frames in flight, 1.5 bytes a pixel at 4:2:0 8-bit), the RGB poster and its
    /// upright copy, and the largest size: about 45 MB at 1080p. Throws what the headers' checks throw.
    public func workingBytes(ofMovie movie: [UInt8], sizes: [Target]) throws(MovieError) -> Int {
        let info = try Movie.info(of: movie, limits: movieLimits)
        let pixels = info.width * info.height
        let upright = info.uprightSize
        return pixels * 15 + pixels * 6 + Self.outputBytes(width: upright.width, height: upright.height, sizes: sizes)
    }
}
