import Foundation
import JPEG
import Proto
import RPC
import Runtime
import WorkerRuntime
import ZMQ

/// Composes thumbnail-worker: a connection to the image service, the job runner that leases
/// `thumbnails` jobs from it and makes their thumbnails, and a Health endpoint.
public enum ThumbnailWorkerHost {
    /// The flags of the thumbnail-worker executable.
    public static let options = WorkerConfiguration.options(
        healthEnv: EnvironmentNames.thumbnailWorkerHealth, healthDefault: Defaults.thumbnailWorkerHealth)

    /// The worker's parts, in start order: the image-service connection, the runner (as many
    /// jobs at once as `configuration.concurrency`) and the host answering Health/Check. The
    /// worker holds nothing durable: a job it was running when it died returns to the queue
    /// when its lease expires. Nothing is connected or bound until the composition starts.
    public static func make(_ configuration: WorkerConfiguration, context: Context, logger: Logger) throws -> ServiceComposition {
        let connection = ClientConnection(name: "image-service-connection", context: context, endpoint: configuration.imageServiceEndpoint)
        let handler = ThumbnailJobHandler(connection: connection, maker: makeThumbnails)
        let runner = JobRunner(
            name: "thumbnail-runner", connection: connection,
            configuration: JobRunner.Configuration(
                queue: "thumbnails", workerID: WorkerConfiguration.workerID("thumbnail-worker"),
                concurrency: configuration.concurrency, leaseMilliseconds: configuration.leaseMilliseconds),
            logger: logger, handler: handler.run)
        let host = try ServiceHost(
            name: "thumbnail-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)
        return ServiceComposition([connection, runner, host])
    }

    /// Every size from one decode (`Thumbnailer`, quality 80, the ICC profile kept).
    static func makeThumbnails(_ jpeg: [UInt8], _ sizes: [Int]) throws -> [Thumbnail] {
        try Thumbnailer().thumbnails(of: jpeg, sizes: sizes.map { Thumbnailer.Target(longestEdge: $0) }).map { output in
            var thumbnail = Thumbnail()
            thumbnail.size = Int32(output.target.width)
            thumbnail.data = output.data
            thumbnail.width = Int32(output.width)
            thumbnail.height = Int32(output.height)
            return thumbnail
        }
    }
}
