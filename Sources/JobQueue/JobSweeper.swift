import Foundation
import Runtime
import Locking
import Synchronization

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
    /// The ticking task and its stop flag; nil before `start()` and after `stop()`.
    private let ticking = Locked<(task: Task<Void, Never>, stopped: StopFlag)?>(nil)

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
            let stopped = StopFlag()
            let task = Task(priority: .utility) {
                while !stopped.isSet {
                    try? await Task.sleep(for: .milliseconds(interval))  // cut short by stop()'s cancel
                    guard !stopped.isSet else { return }
                    await Self.sweep(service, pruneChunk: pruneChunk, stopped: stopped)
                }
            }
            ticking = (task, stopped)
        }
    }

    /// Stops ticking without waiting: a step of a sweep under way that the store has not run
    /// yet changes nothing when it runs (or the store, once closed, refuses it), so nothing is
    /// swept once this returns; safe to call twice and before ``start()``.
    public func stop() {
        guard let ticking = ticking.withLock({ $0.take() }) else { return }
        ticking.stopped.set()
        ticking.task.cancel()
    }

    /// One tick over every queue; a failure is logged and the next tick tries again. Once
    /// `stopped`, it ends after the step under way, which then changes nothing.
    static func sweep(_ service: JobQueueService<Owner>, pruneChunk: Int, stopped: StopFlag) async {
        for (name, queue) in service.queues {
            guard !stopped.isSet else { return }
            do {
                let expired = try await service.owner.write { _, jobs in
                    try stopped.check()
                    return try jobs.requeueExpired(queue: name, now: service.clock.nowMilliseconds())
                }
                service.announce(expired, queue: name)
                var pruned = pruneChunk
                while pruned == pruneChunk, !stopped.isSet {
                    pruned = try await service.owner.write { _, jobs in
                        try stopped.check()
                        return try jobs.prune(queue: name, now: service.clock.nowMilliseconds(), limit: pruneChunk).most
                    }
                }
                if queue.notifier.waiterCount > 0, !stopped.isSet {
                    let ready = try await service.reader.read { jobs in
                        try jobs.hasReadyJob(queue: name, now: service.clock.nowMilliseconds())
                    }
                    if ready { queue.notifier.signal() }
                }
            } catch {
                // Stopped: a step it refused, or the store closing after the sweeper.
                guard !stopped.isSet else { return }
                service.logger.warning("job sweep failed", ["queue": name, "error": "\(error)"])
            }
        }
    }
}

/// Set once a sweeper stops; a step the store runs after that does nothing.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .releasing) }

    var isSet: Bool { value.load(ordering: .acquiring) }

    /// Throws `CancellationError` once set.
    func check() throws {
        if isSet { throw CancellationError() }
    }
}
