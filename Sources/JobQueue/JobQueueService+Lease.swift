import Proto
import RPC
import Runtime

extension JobQueueService {
    /// Lease: leases what is ready, or waits up to wait_ms (within the call's deadline) for an
    /// enqueue, a requeue, a resume or the next job's run_at, then tries again. No polling:
    /// the wait sleeps until the earliest of its end and the queue's next due time, or a signal.
    func lease(_ request: LeaseRequest, _ context: RPCContext) async throws -> LeaseResponse {
        guard let queue = queues[request.queue] else { throw JobStoreError.unknownQueue(request.queue, served: queues.keys) }
        try refuseInProcess(request.queue)
        guard request.waitMs >= 0 else { throw JobStoreError.invalidArgument("wait_ms must be ≥ 0 (got \(request.waitMs))") }
        // Answer a little before the caller's deadline, so the empty reply reaches it in time.
        let budget = context.remainingMilliseconds
        let waitEnd = monotonicMilliseconds() + min(Int64(request.waitMs), max(0, budget - min(250, budget / 5)))
        while true {
            let generation = queue.notifier.generation
            // Not waiting for the fsync: a lease lost to a power cut only has its job leased
            // again, and the first worker's Complete is then refused as a stale lease.
            let leased = try await owner.write(durable: false) { [clock] _, jobs in
                // Queued past the call's deadline: its caller hears nothing, so lease it nothing.
                try context.checkDeadline()
                return try jobs.lease(request, now: clock.nowMilliseconds())
            }
            announce(leased.expired, queue: request.queue, leasedNow: leased.jobs.count)
            var response = LeaseResponse()
            response.jobs = leased.jobs
            if !leased.jobs.isEmpty { giveBackIfUndelivered(leased.jobs, context) }
            let left = waitEnd - monotonicMilliseconds()
            if !leased.jobs.isEmpty || left <= 0 || Task.isCancelled || draining.load(ordering: .relaxed) { return response }
            var sleep = left
            if let due = leased.nextDueAtMs { sleep = min(sleep, max(1, due - clock.nowMilliseconds())) }
            await queue.notifier.wait(since: generation, timeoutMilliseconds: sleep)
            // The wait ran out with no signal and no job falling due: nothing to look for.
            if queue.notifier.generation == generation && monotonicMilliseconds() >= waitEnd { return LeaseResponse() }
            if draining.load(ordering: .relaxed) { return LeaseResponse() }
        }
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
