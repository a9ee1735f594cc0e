import Foundation
import Proto
import RPC
import Runtime
import Locking

/// What a job's handler throws when the job should not be completed: the message is kept in
/// the job's history; `permanent` sends it to DEAD at once (a poison input), else it is retried
/// after the queue's backoff, or after `retryAfterMilliseconds` when given.
///
/// `pausesRunner`: the cause is not the job's (what it calls is down, say), and the next jobs
/// would only meet it too: the runner leases nothing more until this job's next attempt is
/// due (at most `Configuration.maxPauseMilliseconds`). `logged`: the handler logged the
/// failure itself, at a cadence of its own; the runner's line is then at debug level.
public struct JobFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var permanent: Bool
    public var retryAfterMilliseconds: Int32
    public var pausesRunner: Bool
    public var logged: Bool

    public init(
        _ message: String, permanent: Bool = false, retryAfterMilliseconds: Int32 = 0, pausesRunner: Bool = false, logged: Bool = false
    ) {
        self.message = message
        self.permanent = permanent
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.pausesRunner = pausesRunner
        self.logged = logged
    }

    public var description: String { message }
}

/// Runs the jobs of one queue, of another process over RPC or of its own (`JobQueueClient`):
/// leases as many as it has free slots (long poll), runs each in a task with its lease
/// extended while it runs and until its result is reported (heartbeats), and completes or
/// fails it, each call with an idempotency key of its own so a retry after a lost reply
/// changes nothing more. A failure may pause the leasing (`JobFailure.pausesRunner`). A report the service cannot take now (busy, or its disk
/// full) is sent again for as long as the lease holds (`JobRunner+Report.swift`).
///
/// `stop()` stops leasing, lets the running jobs finish within the drain period, then cancels
/// the rest and hands them back (`Fail` with `give_back`: queued again at once, no attempt
/// counted) instead of leaving them to their lease's expiry. A job whose lease was lost (the
/// heartbeat was refused: the queue gave it to another worker) is cancelled and not completed.
public final class JobRunner: LifecycleService {
    /// How the runner leases and runs.
    public struct Configuration: Sendable {
        /// The queue (`thumbnails`, `capture`).
        public var queue: String
        /// This worker's name in leases and errors.
        public var workerID: String
        /// Handlers run at once. A job whose handler has returned frees its slot while it is
        /// completed, so up to twice as many jobs may be leased at a time.
        public var concurrency: Int
        /// The lease asked for (0 = the queue's default); heartbeats come every third of it.
        public var leaseMilliseconds: Int32
        /// How long one Lease call waits for a job when none is ready.
        public var waitMilliseconds: Int32
        /// How long `stop()` lets running jobs finish before handing them back.
        public var drainMilliseconds: Int
        /// The longest a job runs (0: no limit): past it, its heartbeats stop, its handler is
        /// cancelled and not waited for, and the job fails for good (DEADLINE_EXCEEDED) naming
        /// the limit (`--max-job-ms`).
        public var maxRunMilliseconds: Int
        /// The longest pause after a failure that pauses the runner (`JobFailure.pausesRunner`),
        /// and the pause when the queue does not say when the job's next attempt is.
        public var maxPauseMilliseconds: Int64

        public init(
            queue: String, workerID: String, concurrency: Int = ProcessInfo.processInfo.activeProcessorCount,
            leaseMilliseconds: Int32 = 0, waitMilliseconds: Int32 = 10_000, drainMilliseconds: Int = 10_000,
            maxRunMilliseconds: Int = 0, maxPauseMilliseconds: Int64 = 10_000
        ) {
            self.queue = queue
            self.workerID = workerID
            self.concurrency = max(1, concurrency)
            self.leaseMilliseconds = leaseMilliseconds
            self.waitMilliseconds = waitMilliseconds
            self.drainMilliseconds = drainMilliseconds
            self.maxRunMilliseconds = max(0, maxRunMilliseconds)
            self.maxPauseMilliseconds = max(0, maxPauseMilliseconds)
        }
    }

    /// Runs one job and returns the result to complete it with.
    public typealias Handler = @Sendable (Job) async throws -> [UInt8]

    public let name: String
    public let configuration: Configuration
    /// The queue the jobs come from and are reported to.
    let queue: any JobQueueClient
    let handler: Handler
    /// Runs on the runner's threads before its first Lease (`init`).
    private let atStart: @Sendable () async -> Void
    let logger: Logger
    let state = Locked(State())
    /// Signalled when a slot frees up or the runner stops.
    let slotFreed = WakeSignal()
    /// Signalled when the last running job has ended.
    private let drained = DispatchSemaphore(value: 0)
    /// Where the loop, the heartbeats and the handlers run (a `BlockingPool` as their executor).
    let threads: BlockingPool

    struct State {
        var stopping = false
        var loop: Task<Void, Never>?
        var running: [String: Task<Void, Never>] = [:]
        /// Jobs stopped by `stop()` past the drain period, to hand back, by id.
        var cancelled: Set<String> = []
        /// Jobs whose lease the queue refused to extend: someone else's now, by id.
        var lost: Set<String> = []
        /// Jobs whose handler has returned, being completed or failed: they no longer hold a
        /// slot, so the next job runs while the service stores this one's result.
        var reporting: Set<String> = []
        /// Until when (monotonic milliseconds) each job's lease holds as far as this worker knows:
        /// its lease's length from when it was leased or last extended.
        var leaseHeldUntil: [String: Int64] = [:]
        /// Jobs whose result waits for the service's disk to have room, with its last refusal.
        var waitingForDisk: [String: String] = [:]
        /// When `waitingForDisk` last went from empty to not (ms since the epoch), for Health.
        var waitingForDiskSince: Int64 = 0
        /// Reports sent again after a busy answer, and after a full disk.
        var busyRetries = 0
        var diskFullRetries = 0
        var completed = 0
        var failed = 0
        /// No Lease before this (monotonic milliseconds): a failure paused the runner
        /// (`JobFailure.pausesRunner`); `.max` until that failure is recorded.
        var pausedUntil: Int64 = 0
    }

    /// A runner of `configuration.queue` through `queue`, which its composition starts before
    /// it; `atStart` runs before the first Lease (a host's tidying of its previous run's leases).
    public init(
        name: String, queue: any JobQueueClient, configuration: Configuration, logger: Logger,
        atStart: @escaping @Sendable () async -> Void = {}, handler: @escaping Handler
    ) {
        self.name = name
        self.queue = queue
        self.configuration = configuration
        self.logger = logger
        self.atStart = atStart
        self.handler = handler
        // One per job slot, and one for the loop and the heartbeats.
        threads = BlockingPool(name: name, count: configuration.concurrency + 1)
    }

    /// A runner of `configuration.queue` through `connection` (to the service that owns the
    /// queue), which its composition starts before it.
    public convenience init(
        name: String, connection: ClientConnection, configuration: Configuration, logger: Logger,
        handler: @escaping Handler
    ) {
        self.init(name: name, queue: RPCJobQueueClient(connection), configuration: configuration, logger: logger, handler: handler)
    }

    /// Jobs completed and failed (handed back ones not counted) since start.
    public var counts: (completed: Int, failed: Int) { state.withLock { ($0.completed, $0.failed) } }

    /// Jobs leased and not yet ended.
    public var runningCount: Int { state.withLock { $0.running.count } }

    /// Starts leasing in a task.
    public func start() {
        threads.start()
        let loop = Task(executorPreference: threads) { [self] in
            await atStart()
            await leaseUntilStopped()
        }
        state.withLock { $0.loop = loop }
    }

    /// Stops leasing, waits up to the drain period for the running jobs, then cancels and hands
    /// back the rest, and returns once every job has ended.
    public func stop() {
        let (loop, anyRunning) = state.withLock { state -> (Task<Void, Never>?, Bool) in
            state.stopping = true
            return (state.loop, !state.running.isEmpty)
        }
        guard let loop else { return }
        defer { threads.stop() }
        loop.cancel()
        slotFreed.signal()
        if anyRunning, drained.wait(timeout: .now() + .milliseconds(configuration.drainMilliseconds)) == .timedOut {
            let late = state.withLock { state -> [Task<Void, Never>] in
                state.cancelled.formUnion(state.running.keys)
                return Array(state.running.values)
            }
            logger.warning("stopping: handing back \(late.count) jobs still running after \(configuration.drainMilliseconds) ms")
            for task in late { task.cancel() }
            drained.wait()
        }
        waitForLoop(loop)
    }

    /// Blocks until the leasing task has returned (it hands back what a last Lease brought).
    private func waitForLoop(_ loop: Task<Void, Never>) {
        let done = DispatchSemaphore(value: 0)
        // On the runner's threads: the caller may be one of the shared pool's.
        Task(executorPreference: threads) {
            await loop.value
            done.signal()
        }
        done.wait()
    }

    /// Slots free for new jobs: `concurrency` handlers at once, and at most as many more jobs
    /// again being reported (a slow Complete holds up the leasing, not the handlers).
    private var freeSlots: Int {
        state.withLock { state in
            let handling = state.running.count - state.reporting.count
            return min(configuration.concurrency - handling, 2 * configuration.concurrency - state.running.count)
        }
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    /// How long the runner is still paused for (`JobFailure.pausesRunner`); 0 when it is not.
    private var pauseLeft: Int64 {
        let until = state.withLock { $0.pausedUntil }
        return until == .max ? .max : max(0, until - monotonicMilliseconds())
    }

    private func leaseUntilStopped() async {
        var failures = 0
        while !stopping {
            let free = freeSlots
            guard free > 0 else {
                await slotFreed.wait(timeoutMilliseconds: 1000)
                continue
            }
            let pause = pauseLeft
            guard pause == 0 else {
                // Signalled when the pausing failure is recorded, and by `stop()`.
                await slotFreed.wait(timeoutMilliseconds: min(pause, 1000))
                continue
            }
            var request = LeaseRequest()
            request.queue = configuration.queue
            request.workerId = configuration.workerID
            request.maxJobs = Int32(free)
            request.leaseMs = configuration.leaseMilliseconds
            request.waitMs = configuration.waitMilliseconds
            let jobs: [Job]
            do {
                jobs = try await queue.lease(request).jobs
                failures = 0
            } catch {
                guard !stopping else { break }
                failures += 1
                if failures == 1 || failures % 30 == 0 {
                    logger.warning("lease from queue \(configuration.queue) failed (\(failures) in a row): \(error)")
                }
                // The service is down or restarting: try again soon, without a busy loop.
                await slotFreed.wait(timeoutMilliseconds: Int64(min(1000 * failures, 5000)))
                continue
            }
            let leasedAt = monotonicMilliseconds()
            state.withLock { state in
                for job in jobs { state.leaseHeldUntil[job.jobId] = leasedAt + Self.leaseLength(of: job, configuration) }
            }
            for job in jobs where !launch(job) {
                // Leased as the runner stopped: back at once, not after its lease.
                await handBack(job)
                state.withLock { _ = $0.leaseHeldUntil.removeValue(forKey: job.jobId) }
            }
        }
    }

    /// Starts running `job`; false once the runner is stopping.
    private func launch(_ job: Job) -> Bool {
        // Made under the lock, so it is registered before it can end and remove itself, and
        // never after `stop()` counted what runs.
        state.withLock { registry in
            guard !registry.stopping else { return false }
            registry.running[job.jobId] = Task(executorPreference: threads) { [self] in
                await run(job)
                let last = state.withLock { state -> Bool in
                    state.running[job.jobId] = nil
                    state.cancelled.remove(job.jobId)
                    state.lost.remove(job.jobId)
                    state.reporting.remove(job.jobId)
                    state.leaseHeldUntil[job.jobId] = nil
                    return state.stopping && state.running.isEmpty
                }
                slotFreed.signal()
                if last { drained.signal() }
            }
            return true
        }
    }

    /// Runs one job with heartbeats, which go on until it is reported, and reports how it ended.
    private func run(_ job: Job) async {
        let work = Task(executorPreference: threads) { [self] in try await runHandler(job) }
        let heartbeat = Task(executorPreference: threads) { [self] in
            if await !keepLeased(job) { work.cancel() }
        }
        defer { heartbeat.cancel() }
        let outcome = await withTaskCancellationHandler {
            await result(of: work, within: configuration.maxRunMilliseconds)
        } onCancel: {
            work.cancel()
        }
        if outcome == nil { work.cancel() }
        let (cancelled, lost) = state.withLock { state in
            state.reporting.insert(job.jobId)
            let (cancelled, lost) = (state.cancelled.contains(job.jobId), state.lost.contains(job.jobId))
            // Before its slot frees: no job is leased until this failure says how long to pause.
            if !cancelled && !lost && Self.pausesRunner(outcome) { state.pausedUntil = .max }
            return (cancelled, lost)
        }
        // Its slot is free: the next job is leased and runs while this one is reported.
        slotFreed.signal()
        switch outcome {
        case _ where lost:
            // Whatever it made, the queue would refuse it: the job runs again elsewhere.
            break
        case nil:
            let limit = configuration.maxRunMilliseconds
            logger.warning("job \(job.jobId) ran past the \(limit) ms a job may run; stopped")
            await fail(job, JobFailure(
                RPCError(.deadlineExceeded, "the job ran past the \(limit) ms a job may run on \(configuration.workerID) (--max-job-ms) and was stopped").description,
                permanent: true))
        case .success(let result)?:
            await complete(job, result)
        case .failure? where cancelled:
            // In a task of its own: this one is cancelled, and so would be its calls.
            await Task(executorPreference: threads) { [self] in await handBack(job) }.value
        case .failure(let failure as JobFailure)?:
            await fail(job, failure)
        case .failure(let error)?:
            await fail(job, JobFailure("\(error)"))
        }
    }

    /// Whether `outcome` is a failure that pauses the runner.
    private static func pausesRunner(_ outcome: Result<[UInt8], any Error>?) -> Bool {
        guard case .failure(let error)? = outcome, let failure = error as? JobFailure else { return false }
        return failure.pausesRunner
    }

    /// The lease's length as the service counts it (its clock, not ours), or as asked for.
    static func leaseLength(of job: Job, _ configuration: Configuration) -> Int64 {
        configuration.leaseMilliseconds > 0 ? Int64(configuration.leaseMilliseconds) : max(job.leaseExpiresAtMs - job.updatedAtMs, 1000)
    }

    /// The work's result, or nil when `milliseconds` (0: no limit) pass first: the work is not
    /// waited for then (a handler stuck where cancellation does not reach must not hold its
    /// job's lease for ever).
    private func result(of work: Task<[UInt8], any Error>, within milliseconds: Int) async -> Result<[UInt8], any Error>? {
        guard milliseconds > 0 else { return await work.result }
        return await withVisibleCheckedContinuation { continuation in
            let first = FirstResult(continuation)
            let timer = Task(executorPreference: threads) {
                guard (try? await Task.sleep(for: .milliseconds(milliseconds))) != nil else { return }
                first.resume(nil)
            }
            Task(executorPreference: threads) {
                let result = await work.result
                timer.cancel()
                first.resume(result)
            }
        }
    }

    /// Extends the lease every third of it while the job runs and is reported; false once the
    /// queue refused (the lease was lost: the job is someone else's now).
    private func keepLeased(_ job: Job) async -> Bool {
        let length = Self.leaseLength(of: job, configuration)
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: .milliseconds(max(length / 3, 100)))
            } catch {
                return true
            }
            var extend = ExtendRequest()
            extend.queue = configuration.queue
            extend.jobId = job.jobId
            extend.leaseId = job.leaseId
            extend.leaseMs = configuration.leaseMilliseconds
            let sent = monotonicMilliseconds()
            do {
                _ = try await queue.extend(extend, timeoutMilliseconds: length / 3)
                state.withLock { $0.leaseHeldUntil[job.jobId] = sent + length }
            } catch where error.code == .failedPrecondition || error.code == .notFound {
                logger.warning("job \(job.jobId) lost its lease (\(error.message)); stopping it")
                state.withLock { _ = $0.lost.insert(job.jobId) }
                return false
            } catch {
                // Not refused, only not heard: the next heartbeat tries again within the lease.
                logger.warning("heartbeat of job \(job.jobId) failed: \(error)")
            }
        }
        return true
    }
}

extension JobRunner {
    /// A handler for jobs whose payload is a `Payload` message and whose result is a `Result`
    /// message: `body` gets the payload decoded, and what it returns is encoded as the result.
    /// A payload that does not decode as `Payload` fails its job permanently, naming the type
    /// and why: retrying would decode the same bytes again.
    public static func typed<Payload: ProtoMessage, Result: ProtoMessage>(
        _ payload: Payload.Type, _ body: @escaping @Sendable (Payload, Job) async throws -> Result
    ) -> Handler {
        { job in
            let decoded: Payload
            do {
                decoded = try Payload(serializedBytes: job.payload)
            } catch {
                throw JobFailure("the payload of job \(job.jobId) is not a \(Payload.protoName): \(error)", permanent: true)
            }
            return try await body(decoded, job).serializedBytes()
        }
    }
}
