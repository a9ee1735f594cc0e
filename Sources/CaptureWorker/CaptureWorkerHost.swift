import JPEG
import Proto
import RPC
import Runtime
import WorkerRuntime
import ZMQ

/// Composes capture-worker: connections to item-service (whose `capture` queue it leases
/// from, and which it attaches photos through) and image-service (where it stores them), the
/// job runner, and a Health endpoint.
public enum CaptureWorkerHost {
    /// The flags of the capture-worker executable: the workers' own and the capture sources'
    /// (which item-service must be given the same).
    public static let options = WorkerConfiguration.options(
        healthEnv: EnvironmentNames.captureWorkerHealth, healthDefault: Defaults.captureWorkerHealth) + CaptureSources.options

    /// The worker's parts, in start order: the two connections, the runner (as many jobs at
    /// once as `configuration.concurrency`, their decodes and edits within the memory budget)
    /// and the host answering Health/Check. Nothing durable is held here: a job it was running
    /// when it died returns to the queue when its lease expires, and its next attempt stores
    /// under the same keys. Nothing is connected or bound until the composition starts.
    public static func make(
        _ configuration: WorkerConfiguration, sources: CaptureSources, context: Context, logger: Logger
    ) throws -> ServiceComposition {
        let items = ClientConnection(name: "item-service-connection", context: context, endpoint: configuration.itemServiceEndpoint)
        let images = ClientConnection(name: "image-service-connection", context: context, endpoint: configuration.imageServiceEndpoint)
        let slots = ComputeSlots(count: configuration.concurrency, budgetBytes: configuration.memoryBytes)
        let handler = CaptureJobHandler(
            items: items, images: images, sources: sources, slots: slots, editor: edit, decoder: decode)
        let runner = JobRunner(
            name: "capture-runner", connection: items,
            configuration: JobRunner.Configuration(
                queue: "capture", workerID: WorkerConfiguration.workerID("capture-worker"),
                concurrency: configuration.concurrency, leaseMilliseconds: configuration.leaseMilliseconds),
            logger: logger, handler: handler.run)
        let host = try ServiceHost(
            name: "capture-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)
        return ServiceComposition([items, images, runner, host])
    }

    /// A whole decode, under the pixel limit: what a photo must pass to be stored.
    static func decode(_ jpeg: [UInt8]) throws {
        do {
            _ = try JPEG.decode(jpeg)
        } catch {
            throw RPCError.invalidArgument("the photo does not decode: \(error)")
        }
    }

    /// The edit of a photo.
    static func edit(_ jpeg: [UInt8], _ edit: Edit) throws -> (data: [UInt8], lossless: Bool) {
        throw RPCError.unimplemented("edits are not built yet")
    }
}
