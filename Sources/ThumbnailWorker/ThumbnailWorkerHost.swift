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
        healthEnv: EnvironmentNames.thumbnailWorkerHealth, healthDefault: Defaults.thumbnailWorkerHealth,
        memoryBytesPerJob: memoryBytesPerJob)

    /// The memory budget per job at once when `--memory-mb` is not given: an 18-megapixel
    /// progressive JPEG decoded for a 1024 thumbnail holds about 70 MB, a baseline one about 17 MB.
    public static let memoryBytesPerJob = 64 << 20

    /// The worker's parts, in start order: the image-service connection, the runner (as many
    /// jobs at once as `configuration.concurrency`) and the host answering Health/Check. The
    /// worker holds nothing durable: a job it was running when it died returns to the queue
    /// when its lease expires. Nothing is connected or bound until the composition starts.
    public static func make(_ configuration: WorkerConfiguration, context: Context, logger: Logger) throws -> ServiceComposition {
        let connection = ClientConnection(name: "image-service-connection", context: context, endpoint: configuration.imageServiceEndpoint)
        // `concurrency` thumbnails made at once within the memory budget, and `readAhead` more
        // jobs running: each reads its original while the others decode, then waits its turn.
        let slots = ComputeSlots(count: configuration.concurrency, budgetBytes: configuration.memoryBytes(perJob: memoryBytesPerJob))
        let handler = ThumbnailJobHandler(connection: connection, slots: slots, weigher: workingBytes, maker: makeThumbnails)
        let runner = JobRunner(
            name: "thumbnail-runner", connection: connection,
            configuration: JobRunner.Configuration(
                queue: JobQueueSpec.thumbnails.name, workerID: WorkerConfiguration.workerID("thumbnail-worker"),
                concurrency: configuration.concurrency + readAhead, leaseMilliseconds: configuration.leaseMilliseconds,
                maxRunMilliseconds: configuration.maxJobMilliseconds),
            logger: logger, handler: handler.run)
        let host = try ServiceHost(
            name: "thumbnail-worker", context: context, rpcEndpoints: [configuration.healthEndpoint], logger: logger)
        host.server.addFigures { runner.figures() + slots.figures() }
        host.server.addHealthConditions { runner.healthConditions() }
        return ServiceComposition([connection, runner, host])
    }

    /// Jobs run beyond `concurrency`, whose originals are read while the others' thumbnails are
    /// made (the lease and read round trips otherwise leave a core idle between jobs: ~10% of
    /// a batch). One per process: it holds one more original in memory.
    public static let readAhead = 1

    /// What making `sizes` of `jpeg` holds at its peak (`Thumbnailer.workingBytes`); 0 for a
    /// header that does not read, which the making then reports.
    static func workingBytes(_ jpeg: [UInt8], _ sizes: [Int]) -> Int {
        (try? Thumbnailer().workingBytes(of: jpeg, sizes: sizes.map { Thumbnailer.Target(longestEdge: $0) })) ?? 0
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
