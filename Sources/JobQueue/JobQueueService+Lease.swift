import Locking
import Proto
import RPC
import Runtime

extension JobQueueService {
    /// Lease: leases what is ready, or waits up to wait_ms (within the call's deadline) for an
    /// enqueue, a requeue, a resume or the next job's run_at, then tries again. No polling:
    /// the wait sleeps until the earliest of its end and the queue's next due time, or a signal.
    ///
    /// The first try runs on the owner's thread and is answered from there, as a Complete is:
    /// a busy queue's Lease never hops through the task pool. Only a Lease that found nothing
    /// and may wait goes on in a task.
    func lease(
        _ request: LeaseRequest, _ context: RPCContext, reply: @escaping @Sendable (Result<LeaseResponse, any Error>) -> Void
    ) {
        let queue: Queue, waitEnd: Int64
        do {
            guard let served = queues[request.queue] else { throw JobStoreError.unknownQueue(request.queue, served: queues.keys) }
            try refuseInProcess(request.queue, context)
            guard request.waitMs >= 0 else { throw JobStoreError.invalidArgument("wait_ms must be ≥ 0 (got \(request.waitMs))") }
            queue = served
            // Answer a little before the caller's deadline, so the empty reply reaches it in time.
            let budget = context.remainingMilliseconds
            waitEnd = monotonicMilliseconds() + min(Int64(request.waitMs), max(0, budget - min(250, budget / 5)))
        } catch {
            return reply(.failure(error))
        }
        let generation = queue.notifier.generation
        leaseOnce(request, context) { [self] result in
            switch result {
            case .failure(let error): reply(.failure(error))
            case .success(let leased):
                if !leased.jobs.isEmpty || monotonicMilliseconds() >= waitEnd || draining.load(ordering: .relaxed) {
                    return reply(.success(Self.response(leased.jobs)))
                }
                // At the priority of the server's own handler tasks.
                Task(priority: RPCServer.handlerPriority) { [self] in
                    do {
                        reply(.success(try await waitAndLease(
                            request, context, queue: queue, from: (generation, leased.nextDueAtMs), until: waitEnd)))
                    } catch {
                        reply(.failure(error))
                    }
                }
            }
        }
    }

    /// One try: leases what is ready on the owner's thread, without waiting for the fsync, and
    /// calls `done` from there; leased jobs are given back if the answer never reaches the caller.
    private func leaseOnce(
        _ request: LeaseRequest, _ context: RPCContext, done: @escaping @Sendable (Result<JobStore.Leased, any Error>) -> Void
    ) {
        // Not waiting for the fsync: a lease lost to a power cut only has its job leased
        // again, and the first worker's Complete is then refused as a stale lease.
        owner.write(durable: false, { [clock] _, jobs in
            // Queued past the call's deadline: its caller hears nothing, so lease it nothing.
            try context.checkDeadline()
            return try jobs.lease(request, now: clock.nowMilliseconds())
        }) { [self] result in
            if case .success(let leased) = result {
                announce(leased.expired, queue: request.queue, leasedNow: leased.jobs.count)
                if !leased.jobs.isEmpty { giveBackIfUndelivered(leased.jobs, context) }
            }
            done(result)
        }
    }

    /// The waiting part of a Lease whose try found nothing: sleeps from `generation` (read
    /// before that try, so a signal since is not missed) until a signal, the next job's due
    /// time, or `waitEnd`, and tries again.
    private func waitAndLease(
        _ request: LeaseRequest, _ context: RPCContext, queue: Queue, from start: (generation: UInt64, nextDueAtMs: Int64?),
        until waitEnd: Int64
    ) async throws -> LeaseResponse {
        var (generation, nextDue) = start
        while true {
            let left = waitEnd - monotonicMilliseconds()
            if left <= 0 || draining.load(ordering: .relaxed) { return LeaseResponse() }
            var sleep = left
            if let due = nextDue { sleep = min(sleep, max(1, due - clock.nowMilliseconds())) }
            await queue.notifier.wait(since: generation, timeoutMilliseconds: sleep)
            // The wait ran out with no signal and no job falling due: nothing to look for.
            if queue.notifier.generation == generation && monotonicMilliseconds() >= waitEnd { return LeaseResponse() }
            if draining.load(ordering: .relaxed) { return LeaseResponse() }
            generation = queue.notifier.generation
            let leased = try await withVisibleCheckedThrowingContinuation { continuation in
                leaseOnce(request, context) { continuation.resume(with: $0) }
            }
            if !leased.jobs.isEmpty { return Self.response(leased.jobs) }
            nextDue = leased.nextDueAtMs
        }
    }

    private static func response(_ jobs: [Job]) -> LeaseResponse {
        var response = LeaseResponse()
        response.jobs = jobs
        return response
    }

    /// Gives `jobs` back to the queue (as a stopping worker would) if the Lease answer that holds
    /// them never reaches its caller: a worker that stopped while its Lease waited (its process
    /// gone, or its call given up) would otherwise hold them, unseen, until their leases expired.
    func giveBackIfUndelivered(_ jobs: [Job], _ context: RPCContext) {
        context.onUndelivered { [self] in
            owner.write({ [clock] _, store in
                for job in jobs {
                    var request = FailRequest()
                    request.queue = job.queue
                    request.jobId = job.jobId
                    request.leaseId = job.leaseId
                    request.giveBack = true
                    _ = try? store.fail(request, now: clock.nowMilliseconds())
                }
            }) { [self] result in
                if case .failure(let error) = result {
                    logger.warning("giving back \(jobs.count) jobs whose Lease answer was not delivered failed (they return when their leases expire): \(error)")
                    return
                }
                logger.info("gave back \(jobs.count) jobs whose Lease answer did not reach its worker (it stopped or went away)",
                    ["jobs": jobs.map(\.jobId).joined(separator: ",")])
                jobsReady(queue: jobs[0].queue)
            }
        }
    }
}
