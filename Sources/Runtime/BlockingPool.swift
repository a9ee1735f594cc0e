import Foundation
import Locking

/// Threads of a part's own for work that blocks (a child process's pipes and exit, a file read):
/// ``run(_:)`` hands a closure to a free thread and suspends the calling task until it returns,
/// so blocking work never holds a thread of the shared pool, which has one per core.
///
/// A ``LifecycleService``: ``start()`` starts the threads; ``stop()`` lets the work running
/// finish, refuses what had not started yet (``Stopped``), and joins the threads. A task
/// cancelled while its work waits for a thread gets `CancellationError` and its work never
/// runs; work already running is not interrupted (it must watch its own time limit).
public final class BlockingPool: LifecycleService {
    /// What ``run(_:)`` throws when the pool is not started or is stopping.
    public struct Stopped: Error, CustomStringConvertible {
        public let pool: String
        public var description: String { "the \(pool) threads are stopped" }
    }

    /// One closure waiting for a thread: runs `body`, or is refused with an error instead.
    private struct Work {
        let id: UInt64
        let body: @Sendable () -> Void
        let refuse: @Sendable (any Error) -> Void
    }

    private struct State {
        var waiting: [Work] = []
        var nextID: UInt64 = 0
        var threads = 0
        var stopping = false
    }

    public let name: String
    private let count: Int
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `count` threads (at least one) named `name.<index>`, started by ``start()``.
    public init(name: String, count: Int) {
        self.name = name
        self.count = max(1, count)
    }

    /// Starts the threads; a second call does nothing.
    public func start() {
        let starting = state.withLock { state -> Bool in
            guard state.threads == 0, !state.stopping else { return false }
            state.threads = count
            return true
        }
        guard starting else { return }
        for index in 0..<count {
            let thread = Thread { [self] in
                nameThisThread("\(name).\(index)")
                while let work = next() { work.body() }
                finished.signal()
            }
            thread.name = "\(name).\(index)"
            thread.start()
        }
    }

    /// The next work, waiting for some; nil once stopping.
    private func next() -> Work? {
        while true {
            available.wait()
            let (work, stopping) = state.withLock { state -> (Work?, Bool) in
                state.stopping ? (nil, true) : (state.waiting.isEmpty ? nil : state.waiting.removeFirst(), false)
            }
            if let work { return work }
            if stopping { return nil }
        }
    }

    /// Runs `work` on one of the threads once one is free and returns what it returned.
    ///
    /// - Throws: What `work` throws; `CancellationError` when the task is cancelled before a
    ///   thread takes it up (it then never runs); ``Stopped`` when the pool is not running.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withVisibleCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let queued = Work(
                    id: id, body: { continuation.resume(with: Result { try work() }) },
                    refuse: { continuation.resume(throwing: $0) })
                let refusal = state.withLock { state -> (any Error)? in
                    if state.threads == 0 || state.stopping { return Stopped(pool: name) }
                    if Task.isCancelled { return CancellationError() }
                    state.waiting.append(queued)
                    return nil
                }
                if let refusal { queued.refuse(refusal) } else { available.signal() }
            }
        } onCancel: {
            // Still waiting: taken out and refused; already running: left to finish.
            let taken = state.withLock { state -> Work? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index)
            }
            taken?.refuse(CancellationError())
        }
    }

    /// Hands `work` to a thread once one is free and returns at once. For a caller that is not
    /// a task (a socket's I/O thread handing over a read), and for work that must run whatever
    /// becomes of the task that wanted it (it is never cancelled). When the pool is not running,
    /// or stops before a thread took `work` up, `work` never runs and `refused` is told why
    /// (``Stopped``), on the calling or the stopping thread.
    public func submit(_ work: @escaping @Sendable () -> Void, refused: @escaping @Sendable (any Error) -> Void) {
        let accepted = state.withLock { state -> Bool in
            guard state.threads > 0, !state.stopping else { return false }
            state.nextID += 1
            state.waiting.append(Work(id: state.nextID, body: work, refuse: refused))
            return true
        }
        if accepted { available.signal() } else { refused(Stopped(pool: name)) }
    }

    /// Runs `work` on one of the threads while `body` runs on the calling thread, and returns
    /// both results once both have finished: `work` is waited for even when `body` throws (it
    /// may read memory that `body`'s caller frees). Throws `body`'s error first, then `work`'s.
    /// `work` must never wait for the caller, nor for anything the caller holds.
    ///
    /// `work` keeps off the calling thread's CPU (`CPUAffinity`): woken next to its waker, it
    /// would hold that CPU for a whole time slice before `body` could start, while the other idled.
    public func alongside<Result: Sendable, Body>(
        _ work: @escaping @Sendable () throws -> Result, while body: () throws -> Body
    ) throws -> (Result, Body) {
        let outcome = Locked<Swift.Result<Result, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let callerCPU = CPUAffinity.current()
        submit({
            let affinity = CPUAffinity.avoiding(callerCPU)
            defer { affinity.restore() }
            let result = Swift.Result { try work() }
            outcome.withLock { $0 = result }
            finished.signal()
        }, refused: { error in
            outcome.withLock { $0 = .failure(error) }
            finished.signal()
        })
        let done: Body
        do {
            done = try body()
        } catch {
            finished.wait()
            throw error
        }
        finished.wait()
        return (try outcome.withLock { $0! }.get(), done)
    }

    /// Lets the work running finish, refuses the work waiting (``Stopped``), and returns once
    /// every thread has ended. Safe to call twice and before ``start()``. Blocks its thread:
    /// call it from a service's stop, not from a task of the shared pool that the work waits on.
    public func stop() {
        let (threads, refused) = state.withLock { state -> (Int, [Work]) in
            defer {
                state.stopping = true
                state.waiting.removeAll()
                state.threads = 0
            }
            return (state.stopping ? 0 : state.threads, state.waiting)
        }
        for work in refused { work.refuse(Stopped(pool: name)) }
        for _ in 0..<threads { available.signal() }
        for _ in 0..<threads { finished.wait() }
    }
}

/// The pool as a task executor: tasks created with `Task(executorPreference: pool)` (or code in
/// `withTaskExecutorPreference(pool)`) run on its threads, not on the shared pool. For a part
/// whose tasks compute or block between their awaits (a worker's handlers and heartbeats).
/// Before ``BlockingPool/start()`` and once it stops, jobs go to the global executor: a task is
/// never dropped, it only runs elsewhere.
extension BlockingPool: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        submit({ [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }, refused: { _ in
            globalConcurrentExecutor.enqueue(job)
        })
    }
}
