import RPC
import Runtime
import ZMQ

/// Composes thumbnail-worker: a Health endpoint (and, as it lands, the thumbnail job loop).
public enum ThumbnailWorkerHost {
    /// The flags of the thumbnail-worker executable.
    public static let options = WorkerConfiguration.options(
        healthEnv: EnvironmentNames.thumbnailWorkerHealth, healthDefault: Defaults.thumbnailWorkerHealth)

    /// The worker's parts: a host answering Health/Check (the worker holds nothing durable);
    /// nothing is bound until the composition starts.
    public static func make(_ configuration: WorkerConfiguration, context: Context, logger: Logger) throws -> ServiceComposition {
        ServiceComposition([try ServiceHost(
            name: "thumbnail-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)])
    }
}
