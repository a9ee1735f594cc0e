import Foundation
import Runtime
import Locking

/// The queue's background work, on a thread of its own (an `IntervalThread`): every tick it
/// ends expired leases (QUEUED again, or DEAD when out of attempts), prunes DONE and DEAD jobs
/// and finished batches past their retention (`JobRetention`) in short writes of `pruneChunk`
/// rows, and wakes waiting Lease calls when a job is ready that nobody announced. Put it in the host's composition after its store.
public final class JobSweeper<Owner: JobStoreOwner>: LifecycleService {
    public var name: String { thread.name }
    private let thread: IntervalThread

    init(service: JobQueueService<Owner>, intervalMilliseconds: Int32, pruneChunk: Int) {
        thread = IntervalThread(name: "job-sweeper", intervalMilliseconds: max(1, intervalMilliseconds)) {
            Self.sweep(service, pruneChunk: pruneChunk)
        }
    }

    public func start() throws { try thread.start() }

    public func stop() { thread.stop() }

    /// One tick over every queue; a failure is logged and the next tick tries again.
    static func sweep(_ service: JobQueueService<Owner>, pruneChunk: Int) {
        for (name, queue) in service.queues {
            do {
                let expired = try wait { done in
                    service.owner.write({ _, jobs in try jobs.requeueExpired(queue: name, now: service.clock.nowMilliseconds()) }, then: done)
                }
                service.announce(expired, queue: name)
                var pruned = pruneChunk
                while pruned == pruneChunk {
                    pruned = try wait { done in
                        service.owner.write({ _, jobs in
                            try jobs.prune(queue: name, now: service.clock.nowMilliseconds(), limit: pruneChunk).most
                        }, then: done)
                    }
                }
                if queue.notifier.waiterCount > 0 {
                    let ready = try wait { done in
                        service.reader.read({ jobs in try jobs.hasReadyJob(queue: name, now: service.clock.nowMilliseconds()) }, then: done)
                    }
                    if ready { queue.notifier.signal() }
                }
            } catch {
                service.logger.warning("job sweep failed", ["queue": name, "error": "\(error)"])
            }
        }
    }

    /// What a submitted job answered, waited for on this (the sweeper's own) thread.
    private static func wait<T: Sendable>(_ submit: (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void) throws -> T {
        let answered = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        submit { result in
            box.result.withLock { $0 = result }
            answered.signal()
        }
        answered.wait()
        return try box.result.withLock { $0! }.get()
    }
}

/// A result handed from the owner's thread to the sweeper's.
private final class ResultBox<T: Sendable>: Sendable {
    let result = Locked<Result<T, any Error>?>(nil)
}
