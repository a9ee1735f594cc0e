import JPEG
import Movie
import Proto
import RPC
import Synchronization
import WorkerRuntime

/// How the thumbnail worker makes a movie's thumbnails without holding the movie: its poster
/// frame is found by FFmpeg over a `RangedMovieSource` whose blocks are ranged GetImage reads
/// (`ImageReader.blockingRead`), so what a job holds is the source's few cached blocks, the
/// demuxer's index and the decode, whatever the movie's size; the memory budget weighs those.
public struct MovieThumbnails: Sendable {
    /// The thumbnails' maker (its pixel limit is the poster's).
    public let thumbnailer: Thumbnailer
    /// The most of a movie fetched to find its poster (`MovieLimits.maxBytes`, `--movie-max-read-mb`).
    public let maxReadBytes: Int64
    /// Posters made and blocks fetched, for Metrics/Stats (shared by every copy).
    public let counts = MovieCounts()

    /// `maxReadBytes` when not given: `MovieLimits`' default, 1 GiB.
    public static let defaultMaxReadBytes = MovieLimits().maxBytes

    public init(thumbnailer: Thumbnailer = Thumbnailer(), maxReadBytes: Int64 = MovieThumbnails.defaultMaxReadBytes) {
        self.thumbnailer = thumbnailer
        self.maxReadBytes = maxReadBytes
    }

    /// The limits under a memory budget of `budgetBytes`: the thumbnailer's pixel limit,
    /// `maxReadBytes`, and an index of at most what the budget holds at
    /// `Movie.indexMemoryPerByte` (`MovieLimits`' 64 MiB at most).
    public func limits(budgetBytes: Int) -> MovieLimits {
        var limits = thumbnailer.movieLimits
        limits.maxBytes = maxReadBytes
        limits.maxIndexBytes = min(limits.maxIndexBytes, Int64(budgetBytes / Movie.indexMemoryPerByte))
        return limits
    }

    /// What a job holds while the poster is found and its thumbnails made, for the slots'
    /// budget: the source's cache and `Thumbnailer.workingBytes(ofMovie:sizes:)` (the read
    /// buffer, the index, the decode, the poster, the thumbnails); never the movie's size.
    public func workingBytes(_ info: MovieInfo, source: RangedMovieSource, sizes: [Int]) -> Int {
        source.cacheBytes + thumbnailer.workingBytes(ofMovie: info, sizes: sizes.map { Thumbnailer.Target(longestEdge: $0) })
    }

    /// The thumbnails of the movie `source` reads, at `sizes`.
    func thumbnails(_ source: RangedMovieSource, sizes: [Int], limits: MovieLimits) throws(MovieError) -> [Thumbnail] {
        let outputs = try thumbnailer.thumbnails(ofMovie: source, sizes: sizes.map { Thumbnailer.Target(longestEdge: $0) }, limits: limits)
        return outputs.map(Thumbnail.init)
    }
}

/// The ranged reads of one movie's job: the `RangedMovieSource.Fetch` of its image, which
/// remembers the first read that failed, so the job is retried for it (the image service
/// restarting) or completed with nothing (the image deleted meanwhile) rather than failed as a
/// damaged movie.
final class MovieReads: Sendable {
    let reader: ImageReader
    let key: String
    private let firstFailure = Mutex<RPCError?>(nil)

    init(reader: ImageReader, key: String) {
        self.reader = reader
        self.key = key
    }

    /// The first read that failed, if one did.
    var failure: RPCError? { firstFailure.withLock { $0 } }

    /// `count` bytes at `offset`, read while the calling thread (the demuxer's) waits, by
    /// `deadline` (else `MovieFetchTimedOut`).
    func fetch(_ offset: Int64, _ count: Int, _ deadline: ContinuousClock.Instant) throws -> [UInt8] {
        let bytes: [UInt8]?
        do {
            bytes = try reader.blockingRead(key, from: offset, count: count, until: deadline)
        } catch {
            firstFailure.withLock { $0 = $0 ?? error }
            throw error
        }
        guard let bytes else { throw MovieFetchTimedOut() }
        return bytes
    }
}

/// What the worker's movie jobs did since it started: posters made, and the blocks they read
/// (every fetch, for headers and posters, those of failed jobs too).
public final class MovieCounts: Sendable {
    private let posters = Atomic<Int>(0)
    private let blocks = Atomic<Int>(0)
    private let bytes = Atomic<Int64>(0)

    init() {}

    /// Counts what `source` fetched, and a poster when one was made.
    func add(_ source: RangedMovieSource, poster: Bool) {
        let fetched = source.fetched
        blocks.add(fetched.blocks, ordering: .relaxed)
        bytes.add(fetched.bytes, ordering: .relaxed)
        if poster { posters.add(1, ordering: .relaxed) }
    }

    /// Posters made, blocks fetched and their bytes.
    public var values: (posters: Int, blocks: Int, bytes: Int64) {
        (posters.load(ordering: .relaxed), blocks.load(ordering: .relaxed), bytes.load(ordering: .relaxed))
    }

    /// The counts for Metrics/Stats and the scrape endpoint.
    public func figures() -> [Figure] {
        let (posters, blocks, bytes) = values
        return [
            Figure("homepwner_worker_movie_posters_total", "Movie posters made.", .counter, value: Double(posters)),
            Figure("homepwner_worker_movie_blocks_fetched_total", "Blocks of movies read (ranged GetImage) to find their posters.",
                   .counter, value: Double(blocks)),
            Figure("homepwner_worker_movie_fetched_bytes_total", "Bytes of those blocks.", .counter, value: Double(bytes)),
        ]
    }
}
