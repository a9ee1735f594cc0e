import JPEG

/// What a movie's container says of its first video stream, read without decoding a frame.
public struct MovieInfo: Sendable, Equatable {
    /// The container, as libavformat names its demuxer: "mov,mp4,m4a,3gp,3g2,mj2" or "matroska,webm".
    public var container: String
    /// The video codec, as FFmpeg names it: "h264", "hevc", "vp9", …
    public var codec: String
    /// The coded size, as stored (before the display matrix turns it).
    public var width: Int, height: Int
    /// The EXIF orientation (1…8) the stream's display matrix amounts to; 1 without one.
    public var orientation: Int
    /// The stream's length in seconds, when the container says.
    public var duration: Double?
    /// The bytes the demuxer read to open the container (its headers and index, which it
    /// holds in memory while the poster is found: see `Movie.indexMemoryPerByte`).
    public var indexBytes: Int64 = 0

    /// The size as shown: width and height swapped for a quarter turn (orientation 5…8).
    public var uprightSize: (width: Int, height: Int) { orientation >= 5 ? (height, width) : (width, height) }
}

/// A movie's poster frame, upright, and how it was found.
public struct Poster: Sendable {
    /// The frame's pixels, turned by the display matrix.
    public var image: RGBImage
    /// When the frame is shown, in seconds from the stream's start.
    public var time: Double
    /// The stream it came from.
    public var info: MovieInfo
    /// Video frames decoded and packets read to find it, and bytes taken from where the movie
    /// is kept (what `MovieLimits.maxBytes` counts: of a ranged movie, whole blocks fetched).
    public var framesDecoded: Int, packetsRead: Int, bytesRead: Int64
    /// Whether the first frame at 1 s was (nearly) black and a later one taken; whether every
    /// frame looked at was black, so the first at 1 s was kept anyway.
    public var skippedBlack: Bool, allBlack: Bool
}
