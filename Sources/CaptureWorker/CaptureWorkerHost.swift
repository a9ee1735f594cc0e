import RPC
import Runtime
import ZMQ

/// Composes capture-worker: a Health endpoint (and, as it lands, the capture job loop).
public enum CaptureWorkerHost {
    /// The flags of the capture-worker executable.
    public static let options = WorkerConfiguration.options(
        healthEnv: EnvironmentNames.captureWorkerHealth, healthDefault: Defaults.captureWorkerHealth)

    /// The worker's parts: a host answering Health/Check (the worker holds nothing durable);
    /// nothing is bound until the composition starts.
    public static func make(_ configuration: WorkerConfiguration, context: Context, logger: Logger) throws -> ServiceComposition {
        ServiceComposition([try ServiceHost(
            name: "capture-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)])
    }
}
