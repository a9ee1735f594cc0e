import Media
import Movie
import Proto
import RPC
import WorkerRuntime

/// One job of the `thumbnails` queue: reads the original from the image service, makes every
/// size asked for from one decode, and answers the `ThumbnailResult` the job is completed with
/// (the image service stores the thumbnails in the transaction that completes the job).
///
/// Only what the thumbnails are made from is read (`ThumbnailSource`: metadata they do not use
/// is skipped unread), and only when that fits the slots' memory budget: an original whose
/// frame and scans alone exceed it fails permanently, naming the budget, before it is read.
/// Each job is weighed by those bytes and what making the thumbnails holds (`weigher`).
///
/// A movie (by the content type the image service sniffed when it was stored) is never read
/// whole: its poster is found over ranged reads of its 1 MiB blocks as FFmpeg reaches them
/// (`MovieThumbnails`), its headers first, outside a slot, to weigh the job by its decode (the
/// source's cached blocks, the demuxer's index, the frames), then, in a slot, the poster. So a
/// movie larger than the budget gets its poster, and one whose index or decode is over the
/// budget fails for good naming it.
///
/// An original that is gone (deleted since the job was queued) completes the job with no
/// thumbnails; a payload or an image that cannot be made into thumbnails fails it permanently,
/// with the reason (a poison image goes to DEAD at once instead of being retried); anything else
/// (the image service restarting) is retried by the queue.
public struct ThumbnailJobHandler: Sendable {
    /// Makes thumbnails of a JPEG at the given sizes (longest edge); throws why it cannot.
    public typealias Maker = @Sendable (_ jpeg: [UInt8], _ sizes: [Int]) throws -> [Thumbnail]
    /// What making them will hold, in bytes, weighed against the slots' memory budget.
    public typealias Weigher = @Sendable (_ jpeg: [UInt8], _ sizes: [Int]) -> Int

    private let connection: ClientConnection
    private let maker: Maker
    private let slots: ComputeSlots
    private let weigher: Weigher
    private let movies: MovieThumbnails

    /// A handler reading originals through `connection`; the thumbnails of at most `slots.count`
    /// jobs are made at once (by default, no bound), and only while what they hold (the bytes
    /// read and `weigher`'s estimate) fits the slots' budget, so a runner with more jobs than slots reads the next original
    /// while the others decode, and its memory stays bounded. Movies are made by `movies`.
    public init(
        connection: ClientConnection, slots: ComputeSlots = ComputeSlots(count: .max), weigher: @escaping Weigher = { _, _ in 0 },
        movies: MovieThumbnails = MovieThumbnails(), maker: @escaping Maker
    ) {
        self.connection = connection
        self.slots = slots
        self.weigher = weigher
        self.movies = movies
        self.maker = maker
    }

    /// Runs `job` and returns its result's bytes (``JobRunner/typed(_:_:)``: a payload that is
    /// not a `ThumbnailJob` fails it permanently).
    public func run(_ job: Job) async throws -> [UInt8] {
        try await JobRunner.typed(ThumbnailJob.self) { payload, job in try await thumbnails(payload, of: job) }(job)
    }

    /// The thumbnails of one decoded job.
    func thumbnails(_ payload: ThumbnailJob, of job: Job) async throws -> ThumbnailResult {
        guard !payload.imageKey.isEmpty, !payload.sizes.isEmpty, payload.sizes.allSatisfy({ $0 > 0 }) else {
            throw JobFailure(
                "job \(job.jobId) names no image or no positive sizes (image_key \"\(payload.imageKey)\", sizes \(payload.sizes))",
                permanent: true)
        }
        let reader = ImageReader(connection: connection)
        guard let image = try await reader.info(of: payload.imageKey) else {
            // Deleted since: nothing to make, and nothing to retry.
            return ThumbnailResult()
        }
        let sizes = payload.sizes.map(Int.init), maker = maker
        if image.mediaType == .movie {
            return try await movieThumbnails(payload.imageKey, size: image.sizeBytes, sizes: sizes, reader: reader)
        }
        let source = ThumbnailSource(reader: reader, limitBytes: slots.budgetBytes)
        let original = try await source.read(payload.imageKey, size: image.sizeBytes)
        // Outside the catch below: a job stopped while it waits for a slot is handed back, not
        // failed as a poison image.
        let made = try await slots.run(cost: original.count + weigher(original, sizes)) { Result { try maker(original, sizes) } }
        do {
            var result = ThumbnailResult()
            result.thumbnails = try made.get()
            return result
        } catch {
            throw JobFailure("image \(payload.imageKey) cannot be made into thumbnails: \(DecodeLimitOption.describe(error))", permanent: true)
        }
    }

    /// The thumbnails of the movie `key` of `size` bytes, its poster found over ranged reads.
    /// The headers are read here, on the job's thread (a runner's own: the reads run on the
    /// connection's I/O thread meanwhile), and weigh the job; the poster is found in a slot.
    func movieThumbnails(_ key: String, size: Int64, sizes: [Int], reader: ImageReader) async throws -> ThumbnailResult {
        let reads = MovieReads(reader: reader, key: key)
        let source = RangedMovieSource(size: size) { offset, count, deadline in try reads.fetch(offset, count, deadline) }
        let movies = movies, limits = movies.limits(budgetBytes: slots.budgetBytes)
        var made: Result<[Thumbnail], MovieError>?
        defer { movies.counts.add(source, poster: (try? made?.get()) != nil) }
        let info: MovieInfo
        do throws(MovieError) {
            info = try Movie.info(of: source, limits: limits)
        } catch {
            return try failure(error, key: key, limits: limits, reads: reads)
        }
        made = try await slots.run(cost: movies.workingBytes(info, source: source, sizes: sizes)) {
            do throws(MovieError) {
                return Result<[Thumbnail], MovieError>.success(try movies.thumbnails(source, sizes: sizes, limits: limits))
            } catch {
                return .failure(error)
            }
        }
        switch made! {
        case .success(let thumbnails):
            var result = ThumbnailResult()
            result.thumbnails = thumbnails
            return result
        case .failure(let error):
            return try failure(error, key: key, limits: limits, reads: reads)
        }
    }

    /// What a movie's job ends with when no poster was made: a read that failed is the image
    /// service's (the job is retried), or the image deleted meanwhile (completed with nothing);
    /// an index over the part of the budget it may take fails for good naming the budget;
    /// anything else about the movie fails for good with what is wrong.
    private func failure(_ error: MovieError, key: String, limits: MovieLimits, reads: MovieReads) throws -> ThumbnailResult {
        switch error.kind {
        case .unreadable:
            if let failed = reads.failure {
                if failed.code == .notFound { return ThumbnailResult() }
                throw failed
            }
            throw JobFailure("image \(key): its poster could not be read: \(error)")
        case .indexOverLimit where limits.maxIndexBytes < MovieLimits().maxIndexBytes:
            throw JobFailure(
                "image \(key) cannot be made into thumbnails within this worker's memory budget: \(error); this worker allows 1/\(Movie.indexMemoryPerByte) of its budget of \(slots.budgetBytes) bytes (--memory-mb)",
                permanent: true)
        default:
            throw JobFailure("image \(key) cannot be made into thumbnails: \(error)", permanent: true)
        }
    }
}
