import Foundation
import Runtime
import Locking

/// The queue's background work, a task that wakes every interval: it ends expired leases
/// (QUEUED again, or DEAD when out of attempts), prunes DONE and DEAD jobs and finished batches
/// past their retention (`JobRetention`) in short writes of `pruneChunk` rows, and wakes
/// waiting Lease calls when a job is ready that nobody announced. Each step is a write or read
/// awaited on the store's owner: no thread of its own, none waiting. Put it in the host's
/// composition after its store.
public final class JobSweeper<Owner: JobStoreOwner>: LifecycleService {
    public let name = "job-sweeper"
    private let service: JobQueueService<Owner>
    private let intervalMilliseconds: Int
    private let pruneChunk: Int
    /// The ticking task; nil before `start()` and after `stop()`.
    private let ticking = Locked<Task<Void, Never>?>(nil)

    init(service: JobQueueService<Owner>, intervalMilliseconds: Int32, pruneChunk: Int) {
        self.service = service
        self.intervalMilliseconds = max(1, Int(intervalMilliseconds))
        self.pruneChunk = pruneChunk
    }

    /// Starts ticking; a second call does nothing.
    public func start() throws {
        let service = service, interval = intervalMilliseconds, pruneChunk = pruneChunk
        ticking.withLock { ticking in
            guard ticking == nil else { return }
            ticking = Task(priority: .utility) {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(interval))
                    guard !Task.isCancelled else { return }
                    await Self.sweep(service, pruneChunk: pruneChunk)
                }
            }
        }
    }

    /// Stops ticking without waiting: a sweep under way ends after its current step, which
    /// the store runs, or refuses once closed (a step is one transaction, so either is whole);
    /// safe to call twice and before ``start()``.
    public func stop() {
        ticking.withLock { $0.take() }?.cancel()
    }

    /// One tick over every queue; a failure is logged and the next tick tries again. Cancelled
    /// (the sweeper stopping), it ends after the step under way.
    static func sweep(_ service: JobQueueService<Owner>, pruneChunk: Int) async {
        for (name, queue) in service.queues {
            guard !Task.isCancelled else { return }
            do {
                let expired = try await service.owner.write { _, jobs in
                    try jobs.requeueExpired(queue: name, now: service.clock.nowMilliseconds())
                }
                service.announce(expired, queue: name)
                var pruned = pruneChunk
                while pruned == pruneChunk, !Task.isCancelled {
                    pruned = try await service.owner.write { _, jobs in
                        try jobs.prune(queue: name, now: service.clock.nowMilliseconds(), limit: pruneChunk).most
                    }
                }
                if queue.notifier.waiterCount > 0, !Task.isCancelled {
                    let ready = try await service.reader.read { jobs in
                        try jobs.hasReadyJob(queue: name, now: service.clock.nowMilliseconds())
                    }
                    if ready { queue.notifier.signal() }
                }
            } catch {
                guard !Task.isCancelled else { return }  // the store closing after the sweeper stopped
                service.logger.warning("job sweep failed", ["queue": name, "error": "\(error)"])
            }
        }
    }
}
