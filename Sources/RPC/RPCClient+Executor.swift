import Locking
import ZMQ

/// The client's I/O thread as a task executor, for callers that make one call after another.
///
/// A task normally awaits a call on the shared pool: its request is handed to the I/O thread
/// (one thread wake-up) and the reply handed back (another). Code run with
/// `withTaskExecutorPreference(client.executor) { … }` runs on the I/O thread itself: a request
/// is sent in the same pass of the loop that made it, and the task resumes in the pass that
/// received its reply, as a thread doing blocking sends and receives would, without blocking
/// anything. While such code runs, the client does no I/O, so it should only compute a little
/// and await calls (a loop of calls in a script or a benchmark); everything else belongs on the pool.
/// Once the client is closed, its jobs run on the global executor.
final class IOThreadExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var stopped = false
    }

    private let state = Locked(State())
    private let loop: SocketLoop

    init(loop: SocketLoop) {
        self.loop = loop
    }

    /// True on the I/O thread.
    var onLoopThread: Bool { loop.isLoopThread }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = state.withLock { state -> Bool in
            if state.stopped { return false }
            state.jobs.append(job)
            return true
        }
        if !accepted {
            globalConcurrentExecutor.enqueue(job)
        } else if !onLoopThread {
            loop.wake()
        }
    }

    /// Whether jobs are waiting (the loop then polls without sleeping).
    var hasJobs: Bool { state.withLock { !$0.jobs.isEmpty } }

    /// Runs the jobs queued so far on the calling (I/O) thread; true if there were any.
    @discardableResult
    func runJobs() -> Bool {
        let jobs = state.withLock { state -> [UnownedJob] in
            defer { state.jobs.removeAll(keepingCapacity: true) }
            return state.jobs
        }
        for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
        return !jobs.isEmpty
    }

    /// Called by the I/O thread as its loop ends: queued and later jobs go to the global executor.
    func stop() {
        let jobs = state.withLock { state -> [UnownedJob] in
            state.stopped = true
            defer { state.jobs.removeAll() }
            return state.jobs
        }
        for job in jobs { globalConcurrentExecutor.enqueue(job) }
    }
}
