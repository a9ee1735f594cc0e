import Proto
import SQLite
import RPC
import Runtime
import Synchronization

/// The `JobQueue` methods of jobs.proto for the queues a host serves, over the host's
/// ``JobStoreOwner``: every call is one job on the database's owner (a write or a read),
/// events (`job.done`, `job.dead`) are published after the commit, and waiting Lease calls
/// sleep on a ``JobNotifier`` per queue.
public final class JobQueueService<Owner: JobStoreOwner>: Sendable {
    /// What a queue does with a worker's result beyond marking the job DONE. Called first, off
    /// the owner's thread (files are written here, before the transaction), it gives the work
    /// for the completing transaction and what follows it (see ``StagedCompletion``). A throw
    /// answers the worker that error and changes nothing.
    public typealias Completion = @Sendable (_ request: CompleteRequest) async throws -> StagedCompletion<Owner.Host>
    /// Publishes an event on a topic (`EventTopic.jobDone`, `.jobDead`).
    public typealias Publish = @Sendable (_ topic: String, _ event: JobEvent) -> Void

    struct Queue: Sendable {
        let configuration: JobQueueConfiguration
        let notifier = JobNotifier()
        let completion: Completion?
        /// Worked by the host itself: Lease, Extend, Complete and Fail over RPC are refused.
        let inProcess: Bool
    }

    let owner: Owner
    /// Where the reads (Stats, ListJobs, GetJob, GetBatch, figures) run: a read-only
    /// connection beside the writer, or the writer itself.
    let reader: any JobStoreReader
    let queues: [String: Queue]
    let clock: any WallClock
    let logger: Logger
    let publish: Publish
    /// Set when the server begins to drain: waiting Leases answer what they have.
    let draining = Atomic<Bool>(false)

    /// A service of `queues` (the same the host's `JobStore` was made with) on `owner`.
    ///
    /// - Parameters:
    ///   - reader: Runs the reads on a connection of its own (``JobReadConnection``, or the
    ///     host's own reader), so they never wait behind the writer's commits; nil: on `owner`.
    ///   - completions: What completing a job does, for each queue whose results are stored
    ///     (by queue name); other queues keep the worker's result as the job's.
    ///   - workedInProcess: Queues the host works itself (item-service's `cascade`): served for
    ///     admin (Stats, ListJobs, GetJob, RetryDead, PauseQueue, PurgeJobs, GetBatch), while
    ///     Lease, Extend, Complete and Fail answer FAILED_PRECONDITION, so no outside client can
    ///     take a job or drop it undone.
    ///   - publish: Where events go (the host's `ServiceHost.publish`).
    public init(
        owner: Owner, reader: (any JobStoreReader)? = nil, queues: [JobQueueConfiguration], completions: [String: Completion] = [:],
        workedInProcess: Set<String> = [], clock: any WallClock,
        logger: Logger, publish: @escaping Publish
    ) {
        for name in completions.keys {
            precondition(queues.contains { $0.name == name }, "a completion for queue \(name), which is not served")
        }
        self.owner = owner
        self.reader = reader ?? owner
        self.queues = Dictionary(
            queues.map { ($0.name, Queue(configuration: $0, completion: completions[$0.name], inProcess: workedInProcess.contains($0.name))) }, uniquingKeysWith: { first, _ in first })
        self.clock = clock
        self.logger = logger
        self.publish = publish
    }

    /// The queue names served, sorted.
    public var queueNames: [String] { queues.keys.sorted() }

    /// Refuses a worker's call (Lease, Extend, Complete, Fail) on a queue the host works itself.
    func refuseInProcess(_ queue: String, _ context: RPCContext) throws {
        try context.checkWorks(queue: queue)
        guard self.queues[queue]?.inProcess == true else { return }
        throw JobStoreError.staleLease(
            "queue \(queue) is worked by this service itself: its jobs are not leased, extended, completed or failed over RPC (Stats, ListJobs, GetJob, RetryDead, PauseQueue and PurgeJobs are)")
    }

    /// Wakes the Lease calls waiting on `queue`: a host that enqueued in a write of its own
    /// calls it once that write has committed (else the sweeper finds the job at its next tick).
    public func jobsReady(queue: String) {
        queues[queue]?.notifier.signal()
    }

    /// What the Lease calls of `queue` wait on. A host that runs a queue's jobs itself, in
    /// process (item-service's cascade), waits on it too, so whatever wakes a waiting Lease
    /// (``jobsReady(queue:)``, a requeue, RetryDead, a resume, the sweeper) wakes it.
    public func notifier(queue: String) -> JobNotifier? {
        queues[queue]?.notifier
    }

    /// The sweeper to put in the host's composition after its store: ends expired leases,
    /// prunes DONE jobs past retention, every `intervalMilliseconds` (nil: a second, or a
    /// quarter of the shortest default lease when that is less).
    public func sweeper(intervalMilliseconds: Int32? = nil, pruneChunk: Int = 1000) -> JobSweeper<Owner> {
        let shortest = queues.values.map { $0.configuration.defaultLeaseMilliseconds }.min()!
        return JobSweeper(service: self, intervalMilliseconds: intervalMilliseconds ?? min(1000, shortest / 4), pruneChunk: pruneChunk)
    }

    // MARK: Registration

    /// Registers every `JobQueue` method on `server` (before it starts).
    public func register(on server: RPCServer) {
        server.registerDeferred(JobQueueRPC.lease) { [self] request, context, reply in lease(request, context, reply: reply) }
        // A stopping server waits for its calls: waiting Leases answer at once, not at their end.
        server.onDrain { [self] in
            draining.store(true, ordering: .relaxed)
            for queue in queues.values { queue.notifier.signal() }
        }
        registerComplete(on: server)
        onWrite(server, JobQueueRPC.fail) { [self] request, context, _, jobs in
            try refuseInProcess(request.queue, context)
            return try jobs.fail(request, now: clock.nowMilliseconds())
        } finish: { [self] job in
            if job.state == .dead { announce(job, EventTopic.jobDead) }
            if job.state == .queued { jobsReady(queue: job.queue) }
            var response = FailResponse()
            response.state = job.state
            return response
        }
        // A heartbeat lost to a power cut: the lease ends sooner than extended, as if the worker died.
        onWrite(server, JobQueueRPC.extend, durable: false) { [self] request, context, _, jobs in
            try refuseInProcess(request.queue, context)
            return try jobs.extend(request, now: clock.nowMilliseconds())
        } finish: { expiry in
            var response = ExtendResponse()
            response.leaseExpiresAtMs = expiry
            return response
        }
        onWrite(server, JobQueueRPC.retryDead) { [self] request, _, _, jobs in
            (try jobs.retryDead(request, now: clock.nowMilliseconds()), request.queue)
        } finish: { [self] response, queue in
            if response.requeued > 0 { jobsReady(queue: queue) }
            return response
        }
        onWrite(server, JobQueueRPC.pauseQueue) { request, _, _, jobs in
            (try jobs.pause(request), request.queue)
        } finish: { [self] response, queue in
            if !response.paused { jobsReady(queue: queue) }
            return response
        }
        onWrite(server, JobQueueRPC.purgeJobs) { request, _, _, jobs in try jobs.purge(request) } finish: { $0 }
        onRead(server, JobQueueRPC.stats) { [self] request, jobs in try jobs.stats(request, now: clock.nowMilliseconds()) }
        onRead(server, JobQueueRPC.listJobs) { request, jobs in try jobs.list(request) }
        onRead(server, JobQueueRPC.getJob) { request, jobs in try jobs.job(request) }
        onRead(server, JobQueueRPC.getBatch) { [self] request, jobs in try jobs.batch(request, now: clock.nowMilliseconds()) }
    }

    /// Complete: a queue without a completion is one write on the owner's thread; one with a
    /// completion stages first (in a task), then writes, then finishes what it staged.
    private func registerComplete(on server: RPCServer) {
        @Sendable func write(
            _ request: CompleteRequest, _ context: RPCContext, _ staged: StagedCompletion<Owner.Host>?,
            reply: @escaping @Sendable (Result<CompleteResponse, any Error>) -> Void
        ) {
            owner.write({ [self] host, jobs in
                try context.checkDeadline()
                try refuseInProcess(request.queue, context)
                return try jobs.complete(request, now: clock.nowMilliseconds()) { job, result in
                    try staged.map { try $0.effect(host, job, result) } ?? result
                }
            }) { [self] result in
                if case .success(let completed) = result, !completed.repeated { announce(completed.job, EventTopic.jobDone) }
                guard let staged else { return reply(result.map { _ in CompleteResponse() }) }
                // Whether the rows committed is not known (the disk failed under the commit; the
                // service stops and its restart's recovery decides): the staged files stay, since
                // rows may name them.
                if case .failure(let error) = result, error is CommitOutcomeUnknown { return reply(.failure(error)) }
                let committed: Bool
                if case .success(let completed) = result { committed = !completed.repeated } else { committed = false }
                Task {
                    await staged.finish(committed)
                    reply(result.map { _ in CompleteResponse() })
                }
            }
        }
        server.registerDeferred(JobQueueRPC.complete) { [self] request, context, reply in
            guard let completion = queues[request.queue]?.completion else { return write(request, context, nil, reply: reply) }
            // A key that may not work this queue stages nothing.
            do { try context.checkWorks(queue: request.queue) } catch { return reply(.failure(error)) }
            Task {
                do {
                    write(request, context, try await completion(request), reply: reply)
                } catch {
                    reply(.failure(error))
                }
            }
        }
    }

    /// Registers `method` as a write on the owner's thread, answered from there once it
    /// committed (no hop through the task pool); `finish` runs after the commit (events).
    private func onWrite<Request, Response, T: Sendable>(
        _ server: RPCServer, _ method: ProtoMethod<Request, Response>, durable: Bool = true,
        _ work: @escaping @Sendable (Request, RPCContext, Owner.Host, JobStore) throws -> T, finish: @escaping @Sendable (T) -> Response
    ) {
        server.registerDeferred(method) { [owner] request, context, reply in
            owner.write(durable: durable, { host, jobs in
                // Queued past the call's deadline (its caller was answered 4): change nothing.
                try context.checkDeadline()
                return try work(request, context, host, jobs)
            }) { result in reply(result.map(finish)) }
        }
    }

    /// Registers `method` as a read on the reader's thread.
    private func onRead<Request, Response>(
        _ server: RPCServer, _ method: ProtoMethod<Request, Response>,
        _ work: @escaping @Sendable (Request, JobStore) throws -> Response
    ) {
        server.registerDeferred(method) { [reader] request, _, reply in
            reader.read({ jobs in try jobs.snapshot { try work(request, jobs) } }, then: reply)
        }
    }

    // MARK: Events

    /// Publishes `job.done` or `job.dead` for a job that just finished.
    func announce(_ job: Job, _ topic: String) {
        var event = JobEvent()
        event.queue = job.queue
        event.jobId = job.jobId
        event.state = job.state
        event.error = job.state == .dead ? job.lastError : ""
        event.atMs = job.updatedAtMs
        publish(topic, event)
    }

    /// After expired leases were ended: `job.dead` for those out of attempts, and the waiters
    /// woken when some went back to QUEUED.
    func announce(_ expired: JobStore.Expired, queue: String, leasedNow: Int = 0) {
        for job in expired.dead { announce(job, EventTopic.jobDead) }
        if expired.requeued > leasedNow { jobsReady(queue: queue) }
    }
}
