import RPC
import Runtime
import ThumbnailWorker

await ProcessRunner.run(
    command: "thumbnail-worker",
    summary: "Takes thumbnail jobs: decodes with DCT scaling, orients, resizes and stores thumbnails.",
    options: ThumbnailWorkerHost.options,
    metricsEnvironment: EnvironmentNames.thumbnailWorkerMetrics
) { options, context, logger in
    try ThumbnailWorkerHost.make(try WorkerConfiguration(options), context: context, logger: logger)
}
