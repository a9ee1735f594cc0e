/// What finding a movie's poster frame may cost, each checked before the work it bounds:
/// the coded size before a decoder is opened (and by the decoder itself, for a size changed
/// mid-stream), the packets, frames and bytes as they are read, the bytes read to open the
/// container (its index, held in memory), the time between packets and inside every read. Decoding runs on one thread (`threads = 1`): the thumbnail worker runs
/// its jobs in parallel already.
public struct MovieLimits: Sendable, Equatable {
    /// The most pixels (coded width × height) a video may have: the image pixel limit
    /// (`--max-pixels`, 100,000,000 by default).
    public var maxPixels: Int
    /// The most packets (of every stream: audio too) read to find the poster.
    public var maxPackets: Int
    /// The most video frames decoded to find the poster (from the key frame before 1 s, then
    /// past black frames).
    public var maxFrames: Int
    /// The most frames past the first one at 1 s that are looked at for one that is not black.
    public var maxBlackFrames: Int
    /// The most bytes taken from where the movie is kept to find its poster: of a movie in
    /// memory, the bytes the demuxer reads (seeks read some twice); of one read in ranges
    /// (`RangedMovieSource`), every block fetched, whole, and again when fetched again. So a
    /// movie that makes the demuxer read through its media stops here, however large it is.
    public var maxBytes: Int64
    /// The most bytes the demuxer may read while it opens the container, before its index is
    /// whole (an MP4's boxes up to and through its `moov`, a Matroska's headers and cues): the
    /// index it builds is held in memory while the poster is found, at up to
    /// `Movie.indexMemoryPerByte` bytes a byte read, so this bounds that memory.
    public var maxIndexBytes: Int64
    /// The most time finding and converting the poster may take, in seconds.
    public var seconds: Double

    /// Limits with the defaults: 2,000 packets, 600 frames (a key frame every 10 s at 60 fps
    /// is still reached), 150 black frames (5 s at 30 fps), 1 GiB read, 64 MiB read to open
    /// the container, 30 s.
    public init(
        maxPixels: Int = 100_000_000, maxPackets: Int = 2_000, maxFrames: Int = 600, maxBlackFrames: Int = 150,
        maxBytes: Int64 = 1 << 30, maxIndexBytes: Int64 = 64 << 20, seconds: Double = 30
    ) {
        self.maxPixels = maxPixels
        self.maxPackets = maxPackets
        self.maxFrames = maxFrames
        self.maxBlackFrames = maxBlackFrames
        self.maxBytes = maxBytes
        self.maxIndexBytes = maxIndexBytes
        self.seconds = seconds
    }
}
