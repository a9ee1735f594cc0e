import CAV
import JPEG

/// A movie's poster frame: the picture a movie shows in a list, taken with FFmpeg's
/// libavformat and libavcodec within `MovieLimits`, from the bytes in memory or from a
/// `RangedMovieSource` (a movie read in blocks as the demuxer reaches them, never whole).
///
/// Only ISO BMFF/QuickTime (MP4, MOV, 3GP) and Matroska/WebM are read, by libavformat's own
/// demuxers named from the signature (`format_whitelist`); no protocol may be opened
/// (`protocol_whitelist`), so a reference to another file or URL inside a movie reads
/// nothing. The first video stream (not a cover picture) is decoded by FFmpeg's own decoder for
/// its codec, among `decoders` only, on one thread. Its coded size is checked against the
/// pixel limit before the decoder opens, and the decoder refuses a larger frame itself.
///
/// The poster is the first frame shown at or past 1 s (the movie's last frame when it is
/// shorter); when that frame is (nearly) black — a walkthrough that starts with the lens
/// covered, a fade in — the next frame that is not, within `MovieLimits.maxBlackFrames`. It is
/// turned upright by the stream's display matrix (`DisplayMatrix`).
public enum Movie {
    /// The codecs posters are decoded from (FFmpeg's codec name) and the decoder used for each.
    public static let decoders: [String: String] = [
        "h264": "h264", "hevc": "hevc", "mpeg4": "mpeg4", "vp8": "vp8", "vp9": "vp9", "av1": "libdav1d",
    ]

    /// The demuxers movies are read by.
    static let formatWhitelist = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm"

    /// The time at which the poster is taken, in seconds.
    public static let posterTime = 1.0

    /// The libavformat demuxer for `head` (the data's first bytes) by its signature: "mov" for
    /// ISO BMFF/QuickTime (an `ftyp`, `moov`, `mdat`, `wide`, `free` or `skip` box first),
    /// "matroska" for EBML; nil for anything else (AVI included).
    public static func demuxer(for head: UnsafeRawBufferPointer) -> String? {
        if head.count >= 8 {
            let type = String(decoding: head[4..<8], as: UTF8.self)
            if ["ftyp", "moov", "mdat", "wide", "free", "skip"].contains(type) { return "mov" }
        }
        if head.count >= 4, head[0] == 0x1A, head[1] == 0x45, head[2] == 0xDF, head[3] == 0xA3 { return "matroska" }
        return nil
    }

    /// Loads FFmpeg's libraries (once: `homepwner_av_load`); throws `decoderMissing`, naming
    /// the library that is not there and what to install, where they are not installed.
    static func loadFFmpeg() throws(MovieError) {
        guard let failure = homepwner_av_load() else { return }
        throw MovieError(
            .decoderMissing,
            "\(String(cString: failure)): posters are decoded by FFmpeg's libraries (\(String(cString: homepwner_av_library_names()))), loaded when a poster is made; install them (Debian: apt-get install libavformat59 libavcodec59 libswscale6) or run this worker from the Docker image's media stage (homepwner-media)")
    }

    /// Whether `data` starts as a container posters are made from.
    public static func sniff(_ data: [UInt8]) -> Bool {
        data.withUnsafeBytes { demuxer(for: UnsafeRawBufferPointer(rebasing: $0.prefix(16))) != nil }
    }

    /// About the memory the demuxer holds at its peak for each byte it read to open the
    /// container (`MovieInfo.indexBytes`, at most `MovieLimits.maxIndexBytes`): an MP4 stores a
    /// sample in 4 to 12 bytes of its `moov`, and libavformat makes an `AVIndexEntry` of 24
    /// bytes of each, twice while it applies the edit list, besides its copy of the tables. As
    /// measured (the thumbnail worker's peak): 432,000 samples in a `moov` of 1.7 MB with sizes
    /// only (no B-frames), 20 MB, 11.5 a byte; with B-frames' `ctts`, 5.2 MB and 34 MB, 6.6.
    public static let indexMemoryPerByte = 12

    /// What the container says of the first video stream, from the headers alone (no frame is
    /// decoded): throws what `poster` would before decoding.
    public static func info(of data: UnsafeRawBufferPointer, limits: MovieLimits = MovieLimits()) throws(MovieError) -> MovieInfo {
        try MovieDemuxer(MemoryMovieSource(data), limits: limits).info
    }

    /// The poster frame of `data`, upright (see the type's description).
    public static func poster(of data: UnsafeRawBufferPointer, limits: MovieLimits = MovieLimits()) throws(MovieError) -> Poster {
        try poster(from: MemoryMovieSource(data), limits: limits)
    }

    /// `info(of:limits:)` of a movie read in ranges: its first block and its index are fetched
    /// (and kept in the source's cache for the poster that follows).
    public static func info(of source: RangedMovieSource, limits: MovieLimits = MovieLimits()) throws(MovieError) -> MovieInfo {
        try MovieDemuxer(source, limits: limits).info
    }

    /// `poster(of:limits:)` of a movie read in ranges: only the blocks the demuxer reaches are
    /// fetched, each counted against `MovieLimits.maxBytes`.
    public static func poster(of source: RangedMovieSource, limits: MovieLimits = MovieLimits()) throws(MovieError) -> Poster {
        try poster(from: source, limits: limits)
    }

    private static func poster(from source: any MovieSource, limits: MovieLimits) throws(MovieError) -> Poster {
        let demuxer = try MovieDemuxer(source, limits: limits)
        return try PosterSearch(demuxer: demuxer, limits: limits).run()
    }

    /// `poster(of:limits:)` of an array.
    public static func poster(of data: [UInt8], limits: MovieLimits = MovieLimits()) throws(MovieError) -> Poster {
        try inPlace(data) { (buffer) throws(MovieError) in try poster(of: buffer, limits: limits) }
    }

    /// `info(of:limits:)` of an array.
    public static func info(of data: [UInt8], limits: MovieLimits = MovieLimits()) throws(MovieError) -> MovieInfo {
        try inPlace(data) { (buffer) throws(MovieError) in try info(of: buffer, limits: limits) }
    }

    static func inPlace<T>(_ data: [UInt8], _ body: (UnsafeRawBufferPointer) throws(MovieError) -> T) throws(MovieError) -> T {
        let result = data.withUnsafeBytes { buffer -> Result<T, MovieError> in
            do throws(MovieError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// FFmpeg's words for an error code.
    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        homepwner_error_string(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
