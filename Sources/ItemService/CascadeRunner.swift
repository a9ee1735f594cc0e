import Dispatch
import JobQueue
import Proto
import RPC
import Runtime
import Locking

/// Delivers the delete cascade: runs the `cascade` queue's jobs in process, one at a time,
/// earliest due first: `DeleteImagesForOwner` to the image service, retried with the queue's
/// backoff until the image service says OK and that it recorded the owner as deleted
/// (`owner_deleted_recorded`: an older image service answers OK without the whole cascade).
///
/// In process, on the `JobStore` through the item store's owner, not through a `JobRunner` over
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
public final class CascadeRunner: LifecycleService {
    /// The worker id of the runner's leases. Fixed: only item-service runs this queue, one per
    /// items.db, so a lease under this id found at start is a previous run's, cut short.
    public static let workerID = "item-service/cascade"

    public var name: String { "cascade" }
    private let store: ItemStoreQueue
    private let connection: ClientConnection
    private let notifier: JobNotifier
    private let logger: Logger
    private let clock: any WallClock
    /// The longest delay of the queue's backoff: a run_at further off means the clock went back.
    private let maxDelayMilliseconds: Int64
    /// The loop's own thread: `stop()` blocks until the loop returned, which it could not do on
    /// a thread of the shared pool that `stop()` holds.
    private let thread = WorkerThreads(name: "cascade", count: 1)
    private let task = Locked<Task<Void, Never>?>(nil)

    /// A runner of the `cascade` jobs in `store`, delivering through `connection` (to the image
    /// service's endpoint); both start before it. It sleeps on the notifier of `service` (which
    /// serves the queue with `configuration`), which the delete handler signals after each
    /// committed delete (`JobQueueService.jobsReady`).
    public init(
        store: ItemStoreQueue, service: JobQueueService<ItemStoreQueue>, configuration: JobQueueConfiguration,
        connection: ClientConnection, logger: Logger, clock: any WallClock
    ) {
        guard let notifier = service.notifier(queue: CascadeQueue.name) else {
            preconditionFailure("the JobQueueService given to CascadeRunner does not serve the \(CascadeQueue.name) queue")
        }
        self.store = store
        self.connection = connection
        self.notifier = notifier
        self.logger = logger
        self.clock = clock
        maxDelayMilliseconds = configuration.retry.maxDelayMilliseconds
    }

    /// Starts delivering, on the runner's thread.
    public func start() {
        thread.start()
        let started = Task(executorPreference: thread) { [self] in
            await takeBackLeasesOfAPreviousRun()
            await deliverUntilCancelled()
        }
        task.withLock { $0 = started }
    }

    /// Stops delivering and returns once the loop has: a delivery in flight is cancelled and
    /// its job given back (QUEUED, ready at once, the attempt not counted); the jobs stay in
    /// items.db for the next start.
    public func stop() {
        guard let running = task.withLock({ state -> Task<Void, Never>? in defer { state = nil }; return state }) else {
            return thread.stop()
        }
        running.cancel()
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: thread) {
            await running.value
            done.signal()
        }
        done.wait()
        thread.stop()
    }

    /// The image service's client.
    private var client: RPCClient { connection.client }

    /// How an attempt ended.
    private enum Attempt {
        /// A job was delivered, or failed for its own reason: the next may be due at once.
        case next
        /// Nothing was due; the next job falls due at this wall-clock time (nil: none is owed).
        case idle(nextDueAtMs: Int64?)
        /// The image service is down, slow or too old (or the store failed): nothing is tried
        /// before this monotonic time.
        case paused(until: Int64)
    }

    private func deliverUntilCancelled() async {
        var pausedUntil: Int64 = 0
        while !Task.isCancelled {
            // Read before looking for work: a delete committed after this ends the wait below.
            let generation = notifier.generation
            // Paused: until the pause ends.
            var sleep: Int64 = 0
            if monotonicMilliseconds() >= pausedUntil {
                switch await attempt() {
                case .next: continue
                case .idle(let due): sleep = due.map { min(max($0 - clock.nowMilliseconds(), 0), 60_000) } ?? 60_000
                case .paused(let until): pausedUntil = until
                }
            }
            // At least 25 ms, so a job that stays due (its failure could not be recorded) is not
            // tried in a busy loop; never before the pause ends, whatever wakes it.
            let wakeAt = max(monotonicMilliseconds() + max(sleep, 25), pausedUntil)
            await notifier.wait(since: generation, timeoutMilliseconds: wakeAt - monotonicMilliseconds())
        }
    }

    /// Leases the earliest due job and delivers it.
    private func attempt() async -> Attempt {
        var request = LeaseRequest()
        request.queue = CascadeQueue.name
        request.maxJobs = 1
        request.workerId = Self.workerID
        let leased: JobStore.Leased
        do {
            leased = try await store.write { [request, clock, maxDelayMilliseconds] _, jobs in
                let now = clock.nowMilliseconds()
                // A job never waits longer than the backoff's cap: one due later than that
                // was scheduled before the wall clock went back, and is due now.
                _ = try jobs.pullIn(queue: CascadeQueue.name, runAtAfter: now + maxDelayMilliseconds, now: now)
                return try jobs.lease(request, now: now)
            }
        } catch {
            logger.warning("cascade jobs could not be leased; will retry", ["error": "\(error)"])
            return .paused(until: monotonicMilliseconds() + maxDelayMilliseconds)
        }
        guard let job = leased.jobs.first else { return .idle(nextDueAtMs: leased.nextDueAtMs) }
        let cascade: DeleteImagesForOwnerRequest
        do {
            cascade = try DeleteImagesForOwnerRequest(serializedBytes: job.payload)
        } catch {
            // No attempt can ever deliver it: DEAD with its reason, where ListJobs shows it.
            await fail(job, "the payload is not a DeleteImagesForOwnerRequest (\(error))", permanent: true)
            return .next
        }
        let deleted: Int64
        do {
            deleted = try await deliver(cascade, jobID: job.jobId)
        } catch {
            if Task.isCancelled {
                await fail(job, "", giveBack: true)
                return .next
            }
            let failed = await fail(job, "\(error)")
            // The first failure and every tenth after it: a long outage should not flood the log.
            let details = ["owner": cascade.ownerKey, "attempts": String(job.attempts), "error": "\(error)"]
            if job.attempts % 10 == 1 {
                logger.warning("cascade not delivered; will retry", details)
            } else {
                logger.debug("cascade not delivered; will retry", details)
            }
            let unreachable = (error as? RPCError).map { $0.code == .unavailable || $0.code == .deadlineExceeded } ?? false
            guard unreachable || error is OlderImageService else { return .next }
            let retryIn = failed.map { $0.runAtMs - clock.nowMilliseconds() } ?? maxDelayMilliseconds
            return .paused(until: monotonicMilliseconds() + min(max(retryIn, 0), maxDelayMilliseconds))
        }
        var complete = CompleteRequest()
        complete.queue = CascadeQueue.name
        complete.jobId = job.jobId
        complete.leaseId = job.leaseId
        do {
            _ = try await store.write { [complete, clock] _, jobs in try jobs.complete(complete, now: clock.nowMilliseconds()) }
            logger.info("cascade delivered", ["owner": cascade.ownerKey, "images_deleted": String(deleted)])
        } catch {
            // Its lease ended meanwhile (expired, or the store failed): the job is delivered
            // again, which changes nothing more.
            logger.warning(
                "cascade delivered but its job not completed; it will be delivered again",
                ["owner": cascade.ownerKey, "job": job.jobId, "error": "\(error)"])
        }
        return .next
    }

    /// Records a failed attempt of `job` (or gives it back); returns the job as it now is, nil
    /// when that could not be written (the job is then back once its lease expires).
    @discardableResult
    private func fail(_ job: Job, _ error: String, permanent: Bool = false, giveBack: Bool = false) async -> Job? {
        var request = FailRequest()
        request.queue = CascadeQueue.name
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.workerId = Self.workerID
        request.error = String(error.prefix(500))
        request.permanent = permanent
        request.giveBack = giveBack
        do {
            return try await store.write { [request, clock] _, jobs in try jobs.fail(request, now: clock.nowMilliseconds()) }
        } catch {
            logger.warning("a cascade attempt could not be recorded", ["job": job.jobId, "error": "\(error)"])
            return nil
        }
    }

    /// At start, before delivering: the jobs this runner's id still holds were being delivered
    /// when item-service died. Each counts as a failed attempt and is due at once, instead of
    /// after its lease (DeleteImagesForOwner is idempotent: delivering again is safe).
    private func takeBackLeasesOfAPreviousRun() async {
        do {
            let taken = try await store.write { [clock] _, jobs -> Int in
                var list = ListJobsRequest()
                list.queue = CascadeQueue.name
                list.state = .running
                list.pageSize = JobLimits.maxPageSize
                var taken = 0
                for job in try jobs.list(list).jobs where job.workerId == Self.workerID {
                    var fail = FailRequest()
                    fail.queue = CascadeQueue.name
                    fail.jobId = job.jobId
                    fail.leaseId = job.leaseId
                    fail.workerId = Self.workerID
                    fail.error = "item-service stopped during this delivery"
                    // Due now rather than after the backoff: the failure was not the image service's.
                    fail.retryAfterMs = 1
                    _ = try jobs.fail(fail, now: clock.nowMilliseconds())
                    taken += 1
                }
                return taken
            }
            if taken > 0 { logger.info("cascade deliveries cut short by a stop are due again", ["jobs": String(taken)]) }
        } catch {
            // Their leases expire on their own; the sweeper then puts them back.
            logger.warning("the cascade's leases of a previous run could not be taken back", ["error": "\(error)"])
        }
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
