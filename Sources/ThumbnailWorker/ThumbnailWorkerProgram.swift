import Media
import RPC
import Runtime
import WorkerRuntime

extension ServiceProgram {
    /// thumbnail-worker: what its executable, `homepwner thumbnail-worker` and a link of that name run.
    public static let thumbnailWorker = ServiceProgram(
        command: "thumbnail-worker",
        summary: "Takes thumbnail jobs: decodes (JPEG with DCT scaling, PNG composited on a background), orients, resizes and stores thumbnails.",
        options: ThumbnailWorkerHost.options,
        metricsEnvironment: EnvironmentNames.thumbnailWorkerMetrics
    ) { options, context, logger in
        try ThumbnailWorkerHost.make(
            try WorkerConfiguration(options), pngBackground: try ThumbnailWorkerHost.pngBackground(options),
            movieMaxReadBytes: try ThumbnailWorkerHost.movieMaxReadBytes(options),
            decodeOptions: try DecodeLimitOption.decodeOptions(options), context: context, logger: logger)
    }
}
