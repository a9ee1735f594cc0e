import Backup
import Foundation
import JobQueue
import Proto
import RPC
import Runtime
import SQLite
import ZMQ

/// Composes item-service: its data folder, store, RPC handlers, events and delete cascade.
public enum ItemServiceHost {
    /// The folder under the data root that only item-service touches.
    public static func dataFolder(_ configuration: ItemServiceConfiguration) -> String {
        (configuration.dataDirectory as NSString).appendingPathComponent("items")
    }

    /// The database file.
    public static func databasePath(_ configuration: ItemServiceConfiguration) -> String {
        (dataFolder(configuration) as NSString).appendingPathComponent("items.db")
    }

    /// item-service's parts, in start order: the fault watch (a storage fault stops the others),
    /// the store (items.db, with the `cascade` and `capture` job queues), a read-only connection
    /// for the queues' reads and one for valuation and readiness, the image service's client, the queues' sweeper, the delete
    /// cascade's runner (to the image service, which AttachPhoto asks about each new photo too),
    /// and the host serving Health, ItemService, CaptureService and JobQueue and publishing item
    /// events. Nothing is opened, bound or started until the composition starts.
    ///
    /// - Parameters:
    ///   - cascadeRetry: The cascade's backoff (`CascadeQueue.retry`; tests pass a faster one).
    ///   - captureRetry: The capture queue's (`CaptureQueue.retry`).
    public static func make(
        _ configuration: ItemServiceConfiguration, context: Context, logger: Logger,
        clock: any WallClock = SystemClock(), cascadeRetry: JobRetryPolicy = CascadeQueue.retry,
        captureRetry: JobRetryPolicy = CaptureQueue.retry
    ) throws -> ServiceComposition {
        try FileManager.default.createDirectory(
            atPath: dataFolder(configuration), withIntermediateDirectories: true)
        let queue = CascadeQueue.configuration(retry: cascadeRetry, retention: configuration.jobRetention)
        let capture = CaptureQueue.configuration(retry: captureRetry, retention: configuration.jobRetention)
        let faults = FaultWatch(logger: logger)
        let store = ItemStoreQueue(
            path: databasePath(configuration), seedPath: configuration.seedDatabase, cascade: queue, capture: capture,
            onFault: { faults.report("items.db: \($0)") })
        // The queues' reads (ListJobs, Stats, GetJob, GetBatch) on a connection of their own,
        // opened once the store has made the tables: they never wait behind the store's commits.
        let jobReader = DatabaseOwner(jobReaderOf: databasePath(configuration), queues: [queue, capture], name: "item-jobs-reader")
        // GetValuation and GetReadiness, which read every item in scope, on another: the
        // store's calls are answered while they run.
        let reader = ItemReaderQueue(itemReaderOf: databasePath(configuration))
        let images = ClientConnection(
            name: "image-service-client", context: context, endpoint: configuration.imageServiceEndpoint,
            configuration: .init(connectWaitMilliseconds: 500))
        let host = try ServiceHost(
            name: "item-service", context: context, rpcEndpoints: [configuration.rpcEndpoint],
            eventEndpoints: [configuration.eventsEndpoint], maxMessageBytes: configuration.maxMessageBytes,
            logger: logger)
        // The cascade queue over JobQueue, for admin (Stats, ListJobs, RetryDead, PauseQueue):
        // item-service runs its jobs itself. The capture queue's jobs are leased by capture workers.
        let jobs = JobQueueService(
            owner: store, reader: jobReader, queues: [queue, capture], workedInProcess: [queue.name], clock: clock, logger: logger,
            publish: { [weak host] topic, event in host?.publish(topic: topic, event) })
        jobs.register(on: host.server)
        host.server.addFigures { await ItemServiceHost.figures(jobs, store) }
        let cascade = CascadeRunner.make(
            store: store, service: jobs, configuration: queue, connection: images,
            logger: logger.with(["part": "cascade"]), clock: clock)
        ItemServiceHandlers.register(
            on: host, store: store, reader: reader, clock: clock, photoCheck: PhotoCheck(connection: images),
            deleted: { jobs.jobsReady(queue: CascadeQueue.name) })
        // Online backups of items.db (docs/protocol.md §18).
        let backups = BackupSnapshots(
            service: "item-service", databasePath: databasePath(configuration),
            stagingFolder: dataFolder(configuration) + "/backup-staging", holdsDeletes: false)
        backups.register(on: host.server)
        // Imports of a portable export (docs/protocol.md §19).
        ImportServiceHandlers.register(
            on: host.server, store: store, staging: ImportStaging(clock: clock), photoCheck: PhotoCheck(connection: images))
        CaptureServiceHandlers.register(
            on: host.server, store: store, sources: configuration.captureSources, images: images, clock: clock,
            enqueued: { jobs.jobsReady(queue: CaptureQueue.name) })
        return ServiceComposition([faults, store, jobReader, reader, backups, images, jobs.sweeper(), cascade, host])
    }

    /// The queues' figures, and the delete cascade's pending work as ItemService/Stats counts it.
    static func figures(_ jobs: JobQueueService<ItemStoreQueue>, _ store: ItemStoreQueue) async -> [Figure] {
        let queues = await jobs.figures()
        guard let pending = try? await store.perform({ try $0.stats().pendingCascades }) else { return queues }
        return queues + [Figure(
            "homepwner_pending_cascades", "Deleted photos whose images the image service has not deleted yet.",
            value: Double(pending))]
    }
}
