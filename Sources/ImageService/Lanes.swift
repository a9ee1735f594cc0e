import Dispatch
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
}
