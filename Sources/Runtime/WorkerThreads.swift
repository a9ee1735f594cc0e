import Dispatch
import Foundation
import Locking

/// Threads of a service's own, as a task executor: a `JobRunner`'s leasing loop, heartbeats and
/// handlers run on them, and item-service's cascade loop, not on the shared pool.
///
/// A handler's work is CPU-bound (a decode, a resize) or blocks; on the shared pool, with one
/// thread per core, it would hold up every other task of the process. And `stop()` of a
/// service is synchronous: it waits for the service's tasks, which could not run if the
/// threads waiting were the pool's. `stop()` joins the threads; tasks that still have work
/// then go on on the global executor.
public final class WorkerThreads: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var stopped = false
        var started = false
    }

    private let name: String
    private let count: Int
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `count` threads (at least one) named `name.<index>`, started by ``start()``.
    public init(name: String, count: Int) {
        self.name = name
        self.count = max(1, count)
    }

    /// Starts the threads; call once.
    public func start() {
        state.withLock { $0.started = true }
        for index in 0..<count {
            let thread = Thread { [self] in
                nameThisThread("\(name).\(index)")
                while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
                finished.signal()
            }
            thread.name = "\(name).\(index)"
            thread.start()
        }
    }

    /// The next job, waiting for one; nil once stopped with nothing queued.
    private func next() -> UnownedJob? {
        while true {
            available.wait()
            let (job, stopped) = state.withLock { state -> (UnownedJob?, Bool) in
                state.jobs.isEmpty ? (nil, state.stopped) : (state.jobs.removeFirst(), false)
            }
            if let job { return job }
            if stopped { return nil }
        }
    }

    /// Runs `job` on one of the threads; before ``start()`` and after ``stop()``, on the global executor.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = state.withLock { state -> Bool in
            guard state.started, !state.stopped else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { available.signal() } else { globalConcurrentExecutor.enqueue(job) }
    }

    /// Runs what is queued, then ends and joins the threads; later jobs go to the global executor.
    public func stop() {
        let started = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.started && !state.stopped
        }
        guard started else { return }
        for _ in 0..<count { available.signal() }
        for _ in 0..<count { finished.wait() }
    }
}
