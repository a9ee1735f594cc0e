import JPEG

/// JPEG thumbnails of a movie: its poster frame (`Movie.poster`), upright, made into
/// thumbnails exactly as a JPEG original's (`Thumbnailer.thumbnails(ofUpright:sizes:)`).
extension Thumbnailer {
    /// The limits a movie's poster is found within: the thumbnailer's pixel limit, the rest
    /// `MovieLimits`' defaults.
    public var movieLimits: MovieLimits { MovieLimits(maxPixels: options.maxPixels) }

    /// The thumbnails of `movie` at `sizes`, in that order, from its poster frame.
    public func thumbnails(ofMovie movie: [UInt8], sizes: [Target], limits: MovieLimits? = nil) throws(MovieError) -> [Output] {
        try thumbnails(ofPoster: try Movie.poster(of: movie, limits: limits ?? movieLimits), sizes: sizes)
    }

    /// The thumbnails of the movie `source` reads in ranges, at `sizes`, from its poster frame.
    public func thumbnails(ofMovie source: RangedMovieSource, sizes: [Target], limits: MovieLimits? = nil) throws(MovieError) -> [Output] {
        try thumbnails(ofPoster: try Movie.poster(of: source, limits: limits ?? movieLimits), sizes: sizes)
    }

    private func thumbnails(ofPoster poster: Poster, sizes: [Target]) throws(MovieError) -> [Output] {
        do throws(JPEGError) {
            return try thumbnails(ofUpright: poster.image, sizes: sizes)
        } catch {
            throw MovieError(.encodeFailed, "its poster could not be encoded as JPEG: \(error.message)")
        }
    }

    /// About the most memory `thumbnails(ofMovie:sizes:)` holds for `movie`, from its headers
    /// alone (`workingBytes(ofMovie:sizes:)` of its `Movie.info`). Throws what the headers'
    /// checks throw.
    public func workingBytes(ofMovie movie: [UInt8], sizes: [Target]) throws(MovieError) -> Int {
        workingBytes(ofMovie: try Movie.info(of: movie, limits: movieLimits), sizes: sizes)
    }

    /// About the most memory finding a poster and making `sizes` of it holds, besides the
    /// movie's bytes (in memory, or a `RangedMovieSource`'s cache): libavformat's read buffer
    /// (64 KiB), the demuxer's index (`Movie.indexMemoryPerByte` for each byte read to open
    /// it), the decoder's frames (about ten: the references a phone's H.264 or HEVC keeps and
    /// the frames in flight, 1.5 bytes a pixel at 4:2:0 8-bit), the RGB poster and its upright
    /// copy, and the largest size: about 45 MB at 1080p.
    public func workingBytes(ofMovie info: MovieInfo, sizes: [Target]) -> Int {
        let pixels = info.width * info.height
        let upright = info.uprightSize
        return MovieInput.bufferBytes + Int(info.indexBytes) * Movie.indexMemoryPerByte + pixels * 15 + pixels * 6
            + Self.outputBytes(width: upright.width, height: upright.height, sizes: sizes)
    }
}
