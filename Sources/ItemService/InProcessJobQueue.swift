import JobQueue
import Proto
import RPC
import Runtime
import WorkerRuntime

/// A queue in this process's own database, for a `JobRunner` beside the service that owns it
/// (item-service's `cascade`): each call is one write on the database owner, not a round trip
/// through ZeroMQ to itself with nothing but a timeout in between. A Lease that finds nothing
/// sleeps on the queue's notifier, as the service's long poll does, so whatever wakes a
/// waiting Lease (`JobQueueService.jobsReady`, a requeue, RetryDead, a resume) wakes it too.
///
/// Completions run no effect (the queue's host writes nothing with them), and a store's
/// refusal comes as the `RPCError` the service would answer (a stale lease FAILED_PRECONDITION,
/// a full disk RESOURCE_EXHAUSTED with reason DISK_FULL); idempotency keys are not needed:
/// nothing is lost between the runner and the store.
public struct InProcessJobQueue<Owner: JobStoreOwner>: JobQueueClient {
    private let owner: Owner
    private let notifier: JobNotifier
    private let clock: any WallClock
    private let pullInBeyond: Int64?

    /// A client of the queues of `owner`; a Lease waits on `notifier` (its queue's in the
    /// `JobQueueService` that serves it). `pullInBeyond`: for a queue whose jobs wait only for
    /// its backoff, its longest delay: a job due later than that was scheduled before the wall
    /// clock went back, and a Lease makes it due now.
    public init(owner: Owner, notifier: JobNotifier, clock: any WallClock, pullInBeyond: Int64? = nil) {
        self.owner = owner
        self.notifier = notifier
        self.clock = clock
        self.pullInBeyond = pullInBeyond
    }

    public func lease(_ request: LeaseRequest) async throws(RPCError) -> LeaseResponse {
        let waitEnd = monotonicMilliseconds() + Int64(max(0, request.waitMs))
        var response = LeaseResponse()
        while true {
            // Read before looking for work: a signal after this ends the wait below.
            let generation = notifier.generation
            // Not waiting for the fsync, as the service's Lease: a lease lost to a power cut
            // only has its job leased again.
            let leased = try await write(durable: false) { [clock, pullInBeyond] _, jobs in
                let now = clock.nowMilliseconds()
                if let pullInBeyond { _ = try jobs.pullIn(queue: request.queue, runAtAfter: now + pullInBeyond, now: now) }
                return try jobs.lease(request, now: now)
            }
            response.jobs = leased.jobs
            let left = waitEnd - monotonicMilliseconds()
            guard leased.jobs.isEmpty, left > 0, !Task.isCancelled else { return response }
            var sleep = left
            if let due = leased.nextDueAtMs { sleep = min(sleep, max(1, due - clock.nowMilliseconds())) }
            await notifier.wait(since: generation, timeoutMilliseconds: sleep)
            // A stopping runner cancels its Lease: it leases nothing more.
            if Task.isCancelled { return response }
        }
    }

    public func extend(_ request: ExtendRequest, timeoutMilliseconds: Int64) async throws(RPCError) -> ExtendResponse {
        var response = ExtendResponse()
        // As the service's: a heartbeat lost to a power cut ends the lease sooner, no more.
        response.leaseExpiresAtMs = try await write(durable: false) { [clock] _, jobs in
            try jobs.extend(request, now: clock.nowMilliseconds())
        }
        return response
    }

    public func complete(_ request: CompleteRequest, idempotencyKey: String) async throws(RPCError) -> CompleteResponse {
        _ = try await write { [clock] _, jobs in try jobs.complete(request, now: clock.nowMilliseconds()).job }
        return CompleteResponse()
    }

    public func fail(_ request: FailRequest, idempotencyKey: String) async throws(RPCError) -> JobQueueFailed {
        let job = try await write { [clock] _, jobs in try jobs.fail(request, now: clock.nowMilliseconds()) }
        var response = FailResponse()
        response.state = job.state
        // Queued again (given back, or to retry): a waiting Lease looks again, as the service's does.
        guard job.state == .queued else { return JobQueueFailed(response: response) }
        notifier.signal()
        return JobQueueFailed(response: response, nextAttemptInMilliseconds: job.runAtMs - job.updatedAtMs)
    }

    /// Fails every RUNNING job of `queue` leased to `workerID`, as a failed attempt with `error`
    /// due again after `retryAfterMilliseconds`: at a start, the jobs a fixed worker id still
    /// holds were cut short by its previous run (they would otherwise wait for their leases to
    /// expire). Returns how many.
    public func takeBack(
        queue: String, leasesOf workerID: String, error: String, retryAfterMilliseconds: Int32
    ) async throws(RPCError) -> Int {
        let taken = try await write { [clock] _, jobs -> Int in
            var list = ListJobsRequest()
            list.queue = queue
            list.state = .running
            list.pageSize = JobLimits.maxPageSize
            var taken = 0
            for job in try jobs.list(list).jobs where job.workerId == workerID {
                var fail = FailRequest()
                fail.queue = queue
                fail.jobId = job.jobId
                fail.leaseId = job.leaseId
                fail.workerId = workerID
                fail.error = error
                fail.retryAfterMs = retryAfterMilliseconds
                _ = try jobs.fail(fail, now: clock.nowMilliseconds())
                taken += 1
            }
            return taken
        }
        if taken > 0 { notifier.signal() }
        return taken
    }

    /// `body` in a write on the owner, its error as the service would answer it.
    private func write<T: Sendable>(
        durable: Bool = true, _ body: @escaping @Sendable (Owner.Host, JobStore) throws -> T
    ) async throws(RPCError) -> T {
        do {
            return try await owner.write(durable: durable, body)
        } catch {
            throw Self.rpcError(error)
        }
    }

    /// `error` as a caller of the service would get it.
    static func rpcError(_ error: any Error) -> RPCError {
        if let error = error as? RPCError { return error }
        if let error = error as? any RPCStatusError {
            return RPCError(
                error.rpcStatus, error.rpcMessage, retryAfterMilliseconds: error.rpcRetryAfterMilliseconds, reason: error.rpcReason)
        }
        if error is CancellationError { return RPCError(.cancelled, "cancelled") }
        return RPCError(.internal, "\(error)")
    }
}
