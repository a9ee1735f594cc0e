import Foundation
import Proto
import RPC
import Runtime

/// How a runner reports a job's end (Complete, Fail, a hand-back), and sends a report again
/// that the service could not take now: a busy service (RESOURCE_EXHAUSTED with
/// retry_after_ms) after that long, a full disk (RESOURCE_EXHAUSTED, reason DISK_FULL) with a
/// backoff, both for as long as the job's lease holds (its heartbeats go on meanwhile). A
/// handler that ends in a full disk (a capture's PutImage) is run again the same way. Neither
/// says anything about the job, so neither fails it: a full disk never sends a job to DEAD.
extension JobRunner {
    /// The first wait before a report refused for a full disk is sent again; it doubles up to
    /// ``diskFullMaxBackoffMilliseconds``.
    static let diskFullFirstBackoffMilliseconds: Int64 = 1000
    /// The longest wait between two reports refused for a full disk.
    static let diskFullMaxBackoffMilliseconds: Int64 = 30_000

    /// Runs the handler, and again after a backoff while it ends in a full disk (DISK_FULL) and
    /// the lease holds: handlers are safe to run again (the queue retries them too), and a full
    /// disk says nothing about the job. Throws the handler's error otherwise, or
    /// `CancellationError` when stopped while it waits.
    func runHandler(_ job: Job) async throws -> [UInt8] {
        var backoff = Self.diskFullFirstBackoffMilliseconds
        defer { state.withLock { _ = $0.waitingForDisk.removeValue(forKey: job.jobId) } }
        while true {
            do {
                return try await handler(job)
            } catch {
                // (No `catch let … as`: Swift 6.3 miscompiles some in async closures.)
                guard let refusal = error as? RPCError, refusal.isDiskFull, leaseHolds(job), !Task.isCancelled else { throw error }
                noteDiskFull(job, refusal, "run again")
            }
            try await Task.sleep(for: .milliseconds(backoff))
            backoff = min(2 * backoff, Self.diskFullMaxBackoffMilliseconds)
        }
    }

    /// Keeps `job` among those waiting for a full disk (Health, figures), warning once per job.
    private func noteDiskFull(_ job: Job, _ refusal: RPCError, _ what: String) {
        let first = state.withLock { state in
            state.diskFullRetries += 1
            if state.waitingForDisk.isEmpty { state.waitingForDiskSince = Int64(Date().timeIntervalSince1970 * 1000) }
            return state.waitingForDisk.updateValue(refusal.message, forKey: job.jobId) == nil
        }
        if first {
            logger.warning("the service's disk is full: job \(job.jobId) is kept and \(what) while its lease holds: \(refusal.message)")
        }
    }

    func complete(_ job: Job, _ result: [UInt8]) async {
        var request = CompleteRequest()
        request.queue = configuration.queue
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.result = result
        let key = Self.idempotencyKey(job, "complete")
        do {
            _ = try await report(job) { [queue] () async throws(RPCError) in
                try await queue.complete(request, idempotencyKey: key)
            }
            state.withLock { $0.completed += 1 }
        } catch where Task.isCancelled {
            // Stopped while the service could not take the result: back to the queue at once.
            // In a task of its own: this one is cancelled, and so would be its calls.
            await Task(executorPreference: threads) { [self] in await handBack(job) }.value
        } catch where error.code == .invalidArgument || Self.isOverALimit(error) {
            // The service refuses what this worker made: making it again would not help.
            await fail(job, JobFailure("the queue refused the result: \(error.message)", permanent: true))
        } catch {
            logger.warning("completing job \(job.jobId) failed (it returns when its lease expires): \(error)")
        }
    }

    /// RESOURCE_EXHAUSTED for a request over a limit of its own (a result too large): neither
    /// busy (retry_after_ms) nor a full disk.
    static func isOverALimit(_ error: RPCError) -> Bool {
        error.code == .resourceExhausted && error.retryAfterMilliseconds == 0 && !error.isDiskFull
    }

    /// The idempotency key of a call about one lease of a job.
    static func idempotencyKey(_ job: Job, _ call: String) -> String {
        "job:\(job.queue):\(job.jobId):\(job.leaseId):\(call)"
    }

    func fail(_ job: Job, _ failure: JobFailure) async {
        let failed = await sendFail(job, failure.message, permanent: failure.permanent, retryAfter: failure.retryAfterMilliseconds)
        if failed != nil {
            state.withLock { $0.failed += 1 }
            let line = "job \(job.jobId) failed\(failure.permanent ? " permanently" : ""): \(failure.message)"
            if failure.logged { logger.debug(line) } else { logger.info(line) }
        }
        guard failure.pausesRunner else { return }
        // Until the job's next attempt: the next jobs would meet what it met. When the queue
        // does not say when that is (or the Fail did not get through), the longest pause.
        let longest = configuration.maxPauseMilliseconds
        let pause = min(max(failed?.nextAttemptInMilliseconds ?? longest, 0), longest)
        state.withLock { $0.pausedUntil = monotonicMilliseconds() + pause }
        slotFreed.signal()
    }

    /// Returns a job unstarted (or stopped) to the queue at once.
    func handBack(_ job: Job) async {
        await sendFail(job, "handed back by \(configuration.workerID) (stopping)", giveBack: true)
    }

    /// Sends `Fail` for `job`; nil (logged) when it did not get through: the job then returns
    /// when its lease expires.
    @discardableResult
    private func sendFail(
        _ job: Job, _ message: String, permanent: Bool = false, retryAfter: Int32 = 0, giveBack: Bool = false
    ) async -> JobQueueFailed? {
        var request = FailRequest()
        request.queue = configuration.queue
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.error = message
        request.permanent = permanent
        request.retryAfterMs = retryAfter
        request.giveBack = giveBack
        request.workerId = configuration.workerID
        let key = Self.idempotencyKey(job, "fail")
        do {
            return try await report(job) { [queue] () async throws(RPCError) in
                try await queue.fail(request, idempotencyKey: key)
            }
        } catch {
            logger.warning("\(giveBack ? "handing back" : "failing") job \(job.jobId) failed (it returns when its lease expires): \(error)")
            return nil
        }
    }

    /// Sends `call`, a report of `job`, until the service takes it or refuses it for good: a
    /// busy answer again after its retry_after_ms, a full disk again after a backoff (1 s
    /// doubling to 30 s), either only while the lease holds (not refused by a heartbeat, and
    /// not past its last known expiry) and the job is not cancelled; throws the last answer.
    func report<Response>(_ job: Job, _ call: () async throws(RPCError) -> Response) async throws(RPCError) -> Response {
        var backoff = Self.diskFullFirstBackoffMilliseconds
        defer { state.withLock { _ = $0.waitingForDisk.removeValue(forKey: job.jobId) } }
        while true {
            let refusal: RPCError
            do {
                return try await call()
            } catch {
                refusal = error
            }
            let wait: Int64
            if refusal.isDiskFull {
                wait = backoff
                backoff = min(2 * backoff, Self.diskFullMaxBackoffMilliseconds)
                noteDiskFull(job, refusal, "its result sent again")
            } else if refusal.code == .resourceExhausted && refusal.retryAfterMilliseconds > 0 {
                wait = Int64(refusal.retryAfterMilliseconds)
                state.withLock { $0.busyRetries += 1 }
            } else {
                throw refusal
            }
            guard leaseHolds(job), !Task.isCancelled else { throw refusal }
            do {
                try await Task.sleep(for: .milliseconds(wait))
            } catch {
                throw refusal
            }
        }
    }

    /// Whether `job`'s lease is still this worker's as far as it knows: no heartbeat was refused
    /// and its last known expiry has not passed.
    private func leaseHolds(_ job: Job) -> Bool {
        state.withLock { state in
            !state.lost.contains(job.jobId) && (state.leaseHeldUntil[job.jobId] ?? 0) > monotonicMilliseconds()
        }
    }
}
