import RPC
import Runtime

extension ServiceProgram {
    /// image-service: what its executable, `homepwner image-service` and a link of that name run.
    public static let imageService = ServiceProgram(
        command: "image-service",
        summary: "Serves the Homepwner blob store: photos and videos by UUID, renditions, a memory-aware cache.",
        options: ImageServiceConfiguration.options,
        metricsEnvironment: EnvironmentNames.imageMetrics
    ) { options, context, logger in
        try ImageServiceHost.make(try ImageServiceConfiguration(options), context: context, logger: logger)
    }
}
