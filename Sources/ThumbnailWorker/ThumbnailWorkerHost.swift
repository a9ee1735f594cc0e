import Foundation
import JPEG
import Media
import Proto
import RPC
import Runtime
import WorkerRuntime
import ZMQ

/// Composes thumbnail-worker: a connection to the image service, the job runner that leases
/// `thumbnails` jobs from it and makes their thumbnails, and a Health endpoint.
public enum ThumbnailWorkerHost {
    /// The flags of the thumbnail-worker executable: a worker's, `--png-background`,
    /// `--movie-max-read-mb` and `--max-pixels` and `--max-decoded-bytes` (which image-service must be given the same).
    public static let options = WorkerConfiguration.options(
        healthEnv: EnvironmentNames.thumbnailWorkerHealth, healthDefault: Defaults.thumbnailWorkerHealth,
        memoryBytesPerJob: memoryBytesPerJob) + [
            OptionSpec(
                name: "png-background", env: EnvironmentNames.pngBackground, defaultValue: RGBColor.white.description,
                help: "colour a PNG's transparent pixels are composited on in its thumbnails (RRGGBB); give image-service the same",
                valueName: "RRGGBB"),
            OptionSpec(
                name: "movie-max-read-mb", env: EnvironmentNames.movieMaxReadMegabytes,
                defaultValue: String(MovieThumbnails.defaultMaxReadBytes >> 20),
                help: "the most of a movie read (in 1 MiB blocks) to find its poster; a movie that needs more fails for good",
                valueName: "MB"),
        ] + DecodeLimitOption.specs

    /// The bytes of a `--movie-max-read-mb` value: 1 to 1048576 MiB.
    public static func movieMaxReadBytes(_ options: ParsedOptions) throws -> Int64 {
        let megabytes = try options.int("movie-max-read-mb")
        guard (1...1_048_576).contains(megabytes) else {
            throw OptionError.invalidValue(option: "--movie-max-read-mb", value: String(megabytes), reason: "must be 1…1048576")
        }
        return Int64(megabytes) << 20
    }

    /// The colour of a `--png-background` value: six hex digits, `#` optional.
    public static func pngBackground(_ options: ParsedOptions) throws -> RGBColor {
        let text = try options.string("png-background")
        guard let color = RGBColor(hex: text) else {
            throw OptionError.invalidValue(option: "--png-background", value: text, reason: "not a colour as RRGGBB (six hex digits, e.g. ffffff)")
        }
        return color
    }

    /// The memory budget per job at once when `--memory-mb` is not given: an 18-megapixel
    /// progressive JPEG decoded for a 1024 thumbnail holds about 70 MB, a baseline one about 17 MB.
    public static let memoryBytesPerJob = 64 << 20

    /// The worker's parts, in start order: the image-service connection, the runner (as many
    /// jobs at once as `configuration.concurrency`) and the host answering Health/Check. The
    /// worker holds nothing durable: a job it was running when it died returns to the queue
    /// when its lease expires. Nothing is connected or bound until the composition starts.
    ///
    /// - Parameters:
    ///   - pngBackground: What a PNG's transparency is composited on.
    ///   - movieMaxReadBytes: The most of a movie read to find its poster.
    ///   - decodeOptions: The limits an original is decoded under (`--max-pixels`, `--max-decoded-bytes`).
    public static func make(
        _ configuration: WorkerConfiguration, pngBackground: RGBColor = .white,
        movieMaxReadBytes: Int64 = MovieThumbnails.defaultMaxReadBytes, decodeOptions: DecodeOptions = .init(),
        context: Context, logger: Logger
    ) throws -> ServiceComposition {
        let connection = ClientConnection(name: "image-service-connection", context: context, endpoint: configuration.imageServiceEndpoint)
        // `concurrency` thumbnails made at once within the memory budget, and `readAhead` more
        // jobs running: each reads its original while the others decode, then waits its turn.
        let slots = ComputeSlots(count: configuration.concurrency, budgetBytes: configuration.memoryBytes(perJob: memoryBytesPerJob))
        let thumbnailer = Thumbnailer(options: decodeOptions, background: pngBackground)
        let movies = MovieThumbnails(thumbnailer: thumbnailer, maxReadBytes: movieMaxReadBytes)
        let handler = ThumbnailJobHandler(
            connection: connection, slots: slots, weigher: { workingBytes($0, $1, with: thumbnailer) }, movies: movies,
            maker: { try makeThumbnails($0, $1, with: thumbnailer) })
        let runner = JobRunner(
            name: "thumbnail-runner", connection: connection,
            configuration: JobRunner.Configuration(
                queue: JobQueueSpec.thumbnails.name, workerID: WorkerConfiguration.workerID("thumbnail-worker"),
                concurrency: configuration.concurrency + readAhead, leaseMilliseconds: configuration.leaseMilliseconds,
                maxRunMilliseconds: configuration.maxJobMilliseconds),
            logger: logger, handler: handler.run)
        let host = try ServiceHost(
            name: "thumbnail-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)
        host.server.addFigures { runner.figures() + slots.figures() + movies.counts.figures() }
        host.server.addHealthConditions { runner.healthConditions() }
        return ServiceComposition([connection, runner, host])
    }

    /// Jobs run beyond `concurrency`, whose originals are read while the others' thumbnails are
    /// made (the lease and read round trips otherwise leave a core idle between jobs: ~10% of
    /// a batch). One per process: it holds one more original in memory.
    public static let readAhead = 1

    /// What making `sizes` of `original` (a JPEG, a PNG or a HEIC: a movie is never read whole,
    /// see `MovieThumbnails`) holds at its peak (`Thumbnailer.workingBytes`); 0 for a header that
    /// does not read, which the making then reports.
    static func workingBytes(_ original: [UInt8], _ sizes: [Int]) -> Int { workingBytes(original, sizes, with: Thumbnailer()) }

    /// `workingBytes(_:_:)` with `thumbnailer`'s limits.
    static func workingBytes(_ original: [UInt8], _ sizes: [Int], with thumbnailer: Thumbnailer) -> Int {
        let targets = sizes.map { Thumbnailer.Target(longestEdge: $0) }
        if PNG.sniff(original) { return (try? thumbnailer.workingBytes(ofPNG: original, sizes: targets)) ?? 0 }
        if HEIF.sniff(original) { return (try? thumbnailer.workingBytes(ofHEIF: original, sizes: targets)) ?? 0 }
        return (try? thumbnailer.workingBytes(of: original, sizes: targets)) ?? 0
    }

    /// Every size from one decode (`Thumbnailer`, quality 80, the ICC profile kept) of a JPEG,
    /// of a PNG composited on the thumbnailer's background, or of a HEIC upright by its
    /// irot/imir. A movie's are made from its poster frame over ranged reads (`MovieThumbnails`).
    static func makeThumbnails(_ original: [UInt8], _ sizes: [Int]) throws -> [Thumbnail] {
        try makeThumbnails(original, sizes, with: Thumbnailer())
    }

    /// `makeThumbnails(_:_:)` by `thumbnailer` (its background for a PNG).
    static func makeThumbnails(_ original: [UInt8], _ sizes: [Int], with thumbnailer: Thumbnailer) throws -> [Thumbnail] {
        let targets = sizes.map { Thumbnailer.Target(longestEdge: $0) }
        let outputs: [Thumbnailer.Output]
        if PNG.sniff(original) {
            outputs = try thumbnailer.thumbnails(ofPNG: original, sizes: targets)
        } else if HEIF.sniff(original) {
            outputs = try thumbnailer.thumbnails(ofHEIF: original, sizes: targets)
        } else {
            outputs = try thumbnailer.thumbnails(of: original, sizes: targets)
        }
        return outputs.map(Thumbnail.init)
    }
}

extension Thumbnail {
    /// The job result's entry for one thumbnail made: its size asked for, bytes and dimensions.
    init(_ output: Thumbnailer.Output) {
        self.init()
        size = Int32(output.target.width)
        data = output.data
        width = Int32(output.width)
        height = Int32(output.height)
    }
}
