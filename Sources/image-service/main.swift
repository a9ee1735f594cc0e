import ImageService
import RPC
import Runtime

await ProcessRunner.run(
    command: "image-service",
    summary: "Serves the Homepwner blob store: photos and videos by UUID, renditions, a memory-aware cache.",
    options: ImageServiceConfiguration.options,
    metricsEnvironment: EnvironmentNames.imageMetrics
) { options, context, logger in
    try ImageServiceHost.make(try ImageServiceConfiguration(options), context: context, logger: logger)
}
