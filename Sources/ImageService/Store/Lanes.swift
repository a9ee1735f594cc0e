import Dispatch
import Runtime
import Locking
import Synchronization

/// Serial queues used in turn, for work that blocks (disk I/O) or that blocked work waits for
/// (digests).
///
/// Each serial queue gets a thread of its own when it has work, even while the shared pool is
/// taken by blocked threads. A concurrent queue would not: its work shares the pool's few
/// threads, so puts blocked in `fsync` while waiting for their digests, which are queued
/// behind them in the same pool, stalled until the pool grew (up to a second, seen with four
/// puts in flight). Work on `digest` lanes never waits on anything, so no cycle can form.
final class Lanes: Sendable {
    private let queues: [DispatchQueue]
    private let next = Atomic<Int>(0)

    init(label: String, count: Int) {
        queues = (0..<count).map { DispatchQueue(label: "\(label).\($0)") }
    }

    /// The next queue in turn.
    func queue() -> DispatchQueue {
        queues[next.add(1, ordering: .relaxed).oldValue % queues.count]
    }

    /// Returns once the work queued on every lane before the call has finished (the store's
    /// `close()` waits for it before it closes the connections that work uses).
    func drain() {
        for queue in queues { queue.sync {} }
    }
}

extension Lanes {
    /// Runs `work` on the next lane while `body` runs on the calling thread, and returns both
    /// results once both have finished: `work` is waited for even when `body` throws (it may
    /// read memory that `body`'s caller frees). Throws `body`'s error first, then `work`'s.
    ///
    /// `work` keeps off the calling thread's CPU (`CPUAffinity`): woken next to its waker, it
    /// used to hold that CPU for a whole time slice before `body` could start its write, while
    /// the other CPU idled (2 MB puts: the write started ~1 ms late in half of them).
    func alongside<Work: Sendable, Body>(
        _ work: @escaping @Sendable () throws -> Work, while body: () throws -> Body
    ) throws -> (Work, Body) {
        let outcome = Locked<Result<Work, any Error>?>(nil)
        let group = DispatchGroup()
        let writerCPU = CPUAffinity.current()
        queue().async(group: group) {
            let affinity = CPUAffinity.avoiding(writerCPU)
            defer { affinity.restore() }
            let result = Result { try work() }
            outcome.withLock { $0 = result }
        }
        let done: Body
        do {
            done = try body()
        } catch {
            group.wait()
            throw error
        }
        group.wait()
        return (try outcome.withLock { $0! }.get(), done)
    }
}
