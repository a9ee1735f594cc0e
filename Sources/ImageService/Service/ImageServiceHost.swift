import Backup
import Foundation
import JobQueue
import RPC
import Runtime
import ZMQ

/// Composes image-service: its data folder, store, cache, pressure watcher, RPC server and events.
public enum ImageServiceHost {
    /// The folder under the data root that only image-service touches.
    public static func dataFolder(_ configuration: ImageServiceConfiguration) -> String {
        (configuration.dataDirectory as NSString).appendingPathComponent("images")
    }

    /// image-service's parts, in start order: the fault watch (a storage fault stops the others),
    /// the store (opened and reconciled with its files
    /// when it starts), the thumbnail queue's sweeper, the backfill of when older photos were
    /// taken (`TakenAtBackfill`), the upload reaper, the memory-pressure
    /// watcher and the host serving Health, the ImageService methods and the `thumbnails`
    /// JobQueue. Nothing is opened, bound or started here.
    public static func make(
        _ configuration: ImageServiceConfiguration, context: Context, logger: Logger
    ) throws -> ServiceComposition {
        let cache = ImageCache(budgetBytes: configuration.effectiveCacheBudgetBytes)
        var limits = ImageStoreLimits(
            maxPixels: configuration.maxPixels, maxUploadBytes: configuration.maxUploadBytes,
            maxChunkBytes: max(4096, min(16 << 20, configuration.maxMessageBytes - (64 << 10))),
            uploadExpiryMilliseconds: Int64(configuration.uploadExpirySeconds) * 1000,
            maxRenditionSourceBytes: configuration.maxRenditionSourceBytes, maxDocumentBytes: configuration.maxDocumentBytes,
            quarantineRetentionMilliseconds: configuration.quarantineRetentionMilliseconds,
            jobRetention: configuration.jobRetention)
        limits.maxDecodedBytes = configuration.maxDecodedBytes
        limits.pngBackground = configuration.pngBackground
        let faults = FaultWatch(logger: logger)
        let store = try ImageStore(
            folder: dataFolder(configuration), cache: cache, limits: limits, logger: logger,
            thumbnailSizes: configuration.thumbnailSizes, onFault: { faults.report($0) })
        let host: ServiceHost
        do {
            host = try ServiceHost(
                name: "image-service", context: context, rpcEndpoints: [configuration.rpcEndpoint],
                eventEndpoints: [configuration.eventsEndpoint], maxMessageBytes: configuration.maxMessageBytes,
                logger: logger)
        } catch {
            store.close()
            throw error
        }
        // A reply carries the data plus ImageInfo and framing; keep a margin under the frame limit.
        // Online backups of images.db; while one is open, deletes wait (docs/protocol.md §18).
        let backups = BackupSnapshots(
            service: "image-service", databasePath: dataFolder(configuration) + "/images.db",
            stagingFolder: dataFolder(configuration) + "/backup-staging", holdsDeletes: true)
        backups.register(on: host.server)
        ImageServiceHandlers.register(
            on: host, store: store, replyLimit: max(4096, configuration.maxMessageBytes - (64 << 10)), backups: backups)
        // The thumbnails queue, in images.db, through the store's writer (its reads on the
        // store's reader); a completed job's thumbnails are stored in the transaction that
        // completes it.
        let publish = ImageServiceHandlers.publisher(host: host, clock: store.clock)
        let jobs = JobQueueService(
            owner: store.writer, reader: store.reader, queues: [store.thumbnailQueue],
            completions: [ThumbnailQueue.name: { request in try await store.stageThumbnails(request, publish: publish) }],
            clock: SystemClock(), logger: logger,
            // Weakly, as the publisher: the host's server keeps `jobs` (its handlers), so a
            // strong capture here is a cycle that outlives stop().
            publish: { [weak host] topic, event in host?.publish(topic: topic, event) })
        jobs.register(on: host.server)
        host.server.addFigures { [cache] in await jobs.figures() + cache.figures() }
        // The store keeps this closure and `jobs` keeps the store (its completions): close()
        // clears it, ending that cycle.
        store.thumbnails.tellCommittedJobs(to: { jobs.jobsReady(queue: ThumbnailQueue.name) })

        let reaper = IntervalThread(
            name: "image-upload-reaper", intervalMilliseconds: Int32(clamping: max(1000, configuration.uploadExpirySeconds * 250))
        ) {
            store.expireUploads()
            store.pruneQuarantine()
        }
        var monitors: [any MemoryPressureMonitor] = []
        var triggerPath: String?
        if configuration.watchMemoryPressure {
            // The cgroup's own PSI when there is one (what a container's limit feels), else the machine's.
            let psi = PSIMonitor.cgroup()
                ?? (FileManager.default.fileExists(atPath: "/proc/pressure/memory") ? PSIMonitor() : nil)
            if let psi {
                monitors.append(psi)
                triggerPath = psi.path
            }
            if let cgroup = CgroupMemoryMonitor.detect() { monitors.append(cgroup) }
        }
        let watcher = PressureWatcher(monitors: monitors, cache: cache, triggerPath: triggerPath, logger: logger)
        return ServiceComposition([faults, store, backups, jobs.sweeper(), TakenAtBackfill(store: store), reaper, watcher, host])
    }
}

extension ImageStore: LifecycleService {
    public var name: String { "image-store" }

    /// Closes the store (`close()`).
    public func stop() { close() }
}
