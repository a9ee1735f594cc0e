import JobQueue
import Proto
import RPC
import Runtime
import WorkerRuntime

/// Delivers the delete cascade: runs the `cascade` queue's jobs in process on a `JobRunner`,
/// one at a time, earliest due first: `DeleteImagesForOwner` to the image service, retried with
/// the queue's backoff until the image service says OK and that it recorded the owner as
/// deleted (`owner_deleted_recorded`: an older image service answers OK without the whole
/// cascade).
///
/// The runner leases through an `InProcessJobQueue` on the item store's owner, not over
/// item-service's own socket: the jobs and the runner live in the same process, so a lease is
/// one write on the owner instead of a round trip through ZeroMQ to itself, with nothing to
/// time out in between. The jobs are in items.db, so deliveries survive restarts of either
/// side; deleting the images of an owner twice has the effect of once, and every attempt of a
/// job carries the same idempotency key, so a delivery repeated after a crash or a lost reply
/// changes nothing more.
///
/// Each delivery also names the photos attached to the deleted item and to no other item (to
/// be deleted whoever owns them), asks the image service to refuse new images for the owner
/// from then on, and first detaches the owner's images from the other items that show them.
/// A job that fails goes back behind the others (its run_at moves by the backoff), so it never
/// holds up the jobs behind it; an image service that is down, slow or too old pauses the
/// runner until that job's next attempt, since the others would only get the same answer.
/// A stop gives the delivery in flight back at once (QUEUED, ready, the attempt not counted).
public enum CascadeRunner {
    /// The worker id of the runner's leases. Fixed: only item-service runs this queue, one per
    /// items.db, so a lease under this id found at start is a previous run's, cut short.
    public static let workerID = "item-service/cascade"

    /// A runner of the `cascade` jobs in `store`, delivering through `connection` (to the image
    /// service's endpoint); both start before it. It sleeps on the notifier of `service` (which
    /// serves the queue with `configuration`), which the delete handler signals after each
    /// committed delete (`JobQueueService.jobsReady`).
    public static func make(
        store: ItemStoreQueue, service: JobQueueService<ItemStoreQueue>, configuration: JobQueueConfiguration,
        connection: ClientConnection, logger: Logger, clock: any WallClock
    ) -> JobRunner {
        guard let notifier = service.notifier(queue: CascadeQueue.name) else {
            preconditionFailure("the JobQueueService given to CascadeRunner does not serve the \(CascadeQueue.name) queue")
        }
        // The longest delay of the queue's backoff: a run_at further off means the clock went
        // back, and no pause lasts longer than the wait for a job's next attempt.
        let maxDelay = configuration.retry.maxDelayMilliseconds
        let queue = InProcessJobQueue(owner: store, notifier: notifier, clock: clock, pullInBeyond: maxDelay)
        let delivery = CascadeDelivery(store: store, connection: connection, logger: logger, clock: clock)
        // Leases of the queue's 60 s, heartbeats every 20 s; no drain at stop: a delivery in
        // flight is given back at once, and delivered again at the next start.
        let runner = JobRunner.Configuration(
            queue: CascadeQueue.name, workerID: workerID, concurrency: 1, waitMilliseconds: 60_000, drainMilliseconds: 0,
            maxPauseMilliseconds: maxDelay)
        return JobRunner(
            name: "cascade", queue: queue, configuration: runner, logger: logger,
            atStart: { await takeBackLeasesOfAPreviousRun(queue, logger) }, handler: delivery.run)
    }

    /// At start, before delivering: the jobs this runner's id still holds were being delivered
    /// when item-service died. Each counts as a failed attempt and is due at once, instead of
    /// after its lease (DeleteImagesForOwner is idempotent: delivering again is safe).
    private static func takeBackLeasesOfAPreviousRun(_ queue: InProcessJobQueue<ItemStoreQueue>, _ logger: Logger) async {
        do {
            // Due now rather than after the backoff: the failure was not the image service's.
            let taken = try await queue.takeBack(
                queue: CascadeQueue.name, leasesOf: workerID, error: "item-service stopped during this delivery", retryAfterMilliseconds: 1)
            if taken > 0 { logger.info("cascade deliveries cut short by a stop are due again", ["jobs": String(taken)]) }
        } catch {
            // Their leases expire on their own; the sweeper then puts them back.
            logger.warning("the cascade's leases of a previous run could not be taken back", ["error": "\(error)"])
        }
    }
}

/// The cascade runner's handler: one job's delivery.
struct CascadeDelivery: Sendable {
    let store: ItemStoreQueue
    let connection: ClientConnection
    let logger: Logger
    let clock: any WallClock

    /// The image service's client.
    private var client: RPCClient { connection.client }

    /// Delivers the job's cascade; its result is empty. A failure goes behind the others with
    /// the backoff, and pauses the runner when the image service is down, slow or too old.
    func run(_ job: Job) async throws -> [UInt8] {
        let cascade: DeleteImagesForOwnerRequest
        do {
            cascade = try DeleteImagesForOwnerRequest(serializedBytes: job.payload)
        } catch {
            // No attempt can ever deliver it: DEAD with its reason, where ListJobs shows it.
            throw JobFailure(String("the payload is not a DeleteImagesForOwnerRequest (\(error))".prefix(500)), permanent: true)
        }
        let deleted: Int64
        do {
            deleted = try await deliver(cascade, jobID: job.jobId)
        } catch {
            // Stopped: the runner gives the job back.
            if Task.isCancelled { throw error }
            // The first failure and every tenth after it: a long outage should not flood the log.
            let details = ["owner": cascade.ownerKey, "attempts": String(job.attempts), "error": "\(error)"]
            if job.attempts % 10 == 1 {
                logger.warning("cascade not delivered; will retry", details)
            } else {
                logger.debug("cascade not delivered; will retry", details)
            }
            let unreachable = (error as? RPCError).map { $0.code == .unavailable || $0.code == .deadlineExceeded } ?? false
            throw JobFailure(String("\(error)".prefix(500)), pausesRunner: unreachable || error is OlderImageService, logged: true)
        }
        logger.info("cascade delivered", ["owner": cascade.ownerKey, "images_deleted": String(deleted)])
        return []
    }

    /// Delivers one cascade: detaches the owner's images from other items, has the image service
    /// delete them and the photos attached only to the owner.
    ///
    /// - Returns: How many images the image service deleted.
    private func deliver(_ cascade: DeleteImagesForOwnerRequest, jobID: String) async throws -> Int64 {
        // Images of the deleted item that other items show (attached before AttachPhoto checked
        // owners) are about to go: those items let go of them first, durably, so none is left
        // pointing at nothing. A retry after a lost reply lists what is left, so this comes
        // before the delete, never after it.
        let owned = try await imageKeys(ownedBy: cascade.ownerKey)
        if !owned.isEmpty {
            let now = clock.nowMilliseconds()
            let changed = try await store.perform { try $0.detachEverywhere(owned, now: now) }
            if !changed.isEmpty {
                logger.info(
                    "photos of a deleted item detached from other items",
                    ["owner": cascade.ownerKey, "items": changed.map(\.key).joined(separator: ",")])
            }
        }
        let response = try await client.call(
            ImageServiceRPC.deleteImagesForOwner, cascade,
            options: CallOptions(
                timeoutMilliseconds: 10_000, idempotencyKey: "cascade-\(jobID)-\(cascade.ownerKey)", retry: .none))
        // An image service from before attached_keys and owner_deleted skips both as unknown
        // fields and still answers OK (a rolling upgrade): the job stays until one records them.
        guard response.ownerDeletedRecorded else { throw OlderImageService(endpoint: client.endpoint) }
        return response.deletedCount
    }

    /// The keys of every image the image service holds for `owner`.
    private func imageKeys(ownedBy owner: String) async throws -> [String] {
        var keys: [String] = []
        var request = ListImagesRequest()
        request.ownerKey = owner
        request.pageSize = 1000
        repeat {
            let page = try await client.call(ImageServiceRPC.listImages, request, options: CallOptions(timeoutMilliseconds: 10_000))
            keys += page.images.map(\.key)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return keys
    }

    /// An image service that answered DeleteImagesForOwner OK without `owner_deleted_recorded`:
    /// it predates `attached_keys` and `owner_deleted`, so the photos attached only to the item
    /// stay and the owner may store images again.
    struct OlderImageService: Error, CustomStringConvertible {
        /// The image service's endpoint.
        let endpoint: String

        var description: String {
            "image-service at \(endpoint) is older than this item-service: it does not record deleted owners; upgrade it"
        }
    }
}
