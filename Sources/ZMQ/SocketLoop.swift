#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Locking
import Synchronization

/// What a ``SocketLoop`` runs: made by the set-up closure on the loop's thread and used there
/// alone, so it may hold the sockets and every other piece of loop state without a lock.
public protocol SocketLoopSteps: AnyObject {
    /// How long the next poll may wait in milliseconds (-1: until a socket is ready or the loop
    /// is woken); nil to go round without polling, when the last turn found work and the next
    /// one probably will too (each poll is a system call).
    func pollTimeout() -> Int?

    /// One turn: handles what the poll found. `polled` is the poller after the poll (item 0 is
    /// the loop's wake-up, already drained), nil when the poll was skipped: then every socket may
    /// be ready. Returns false to end the loop (``drain()`` follows).
    func turn(_ polled: Poller?) -> Bool

    /// The poll failed (ETERM: the context is shutting down); the loop ends and ``drain()`` follows.
    func pollFailed(_ error: any Error)

    /// The loop ends (``SocketLoop/stop()``, a turn that returned false, a failed poll): answer
    /// or finish what is in flight and close the sockets. The last call on the loop's thread.
    func drain()
}

extension SocketLoopSteps {
    public func pollFailed(_ error: any Error) {}
}

/// One thread that owns sockets and polls them: the bring-up, wake-up and shutdown that every
/// socket-owning part (RPC server and client, scrape endpoint, ZAP handler) needs, written once.
///
/// ``start(_:)`` runs the set-up on a new thread named for the kernel and returns once it is done,
/// or rethrows its error after the thread has ended. Then the thread polls with the loop's own
/// wake-up as item 0, so ``wake()`` from any thread ends a poll at once, and hands each turn to
/// the steps. ``stop()`` ends the loop: the steps drain, the thread is joined. Sockets stay on the
/// loop's thread (libzmq sockets are not thread-safe); other threads talk to it through state of
/// the owner's and ``wake()``.
public final class SocketLoop: Sendable {
    /// Why ``start(_:)`` did not start a thread.
    public struct StartRefused: Error, CustomStringConvertible, Sendable {
        public let loop: String
        public let reason: String
        public var description: String { "socket loop \(loop): \(reason)" }
    }

    private enum Phase {
        /// Not started (or stopped before it was).
        case idle
        case settingUp
        case running
        /// The thread's work is over (the drain done, or the set-up failed).
        case ended
    }

    private struct State {
        var phase = Phase.idle
        var thread: pthread_t?
        /// A caller of `join` took on the pthread_join; the others wait for `joined`.
        var joinClaimed = false
        var joined = false
        var setUpError: (any Error)?
        /// `stop()` came first: `start()` refuses.
        var stopRequestedBeforeStart = false
    }

    /// The kernel's name of the thread (its first 15 bytes), e.g. "rpc-item-service".
    public let name: String
    private let stackSize: Int
    private let wakeUp: WakeUp
    private let stopping = Atomic<Bool>(false)
    /// The loop thread's pthread_t while it runs its steps, else 0.
    private let loopThread = Atomic<UInt>(0)
    private let monitor: ThreadMonitor<State>

    /// A loop whose thread will be called `name`; nothing runs before ``start(_:)``.
    public init(name: String, stackSize: Int = 1 << 20) throws {
        self.name = name
        self.stackSize = stackSize
        wakeUp = try WakeUp()
        monitor = ThreadMonitor(State())
    }

    deinit {
        // A loop that ended by itself (a turn returned false) and was never stopped: nobody
        // joins its thread, so let the system reclaim it.
        monitor.withLock { state in
            if let thread = state.pointee.thread, !state.pointee.joinClaimed { pthread_detach(thread) }
        }
    }

    /// True on the loop's thread while it runs set-up, turns and drain.
    public var isLoopThread: Bool {
        loopThread.load(ordering: .relaxed) == Self.currentThread
    }

    /// Whether ``stop()`` was called (the loop may still be draining).
    public var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Ends the current poll of the loop, or the next one; from any thread, cheap when repeated.
    public func wake() {
        wakeUp.signal()
    }

    /// Starts the thread and runs `setUp` on it with the poller (its item 0 is the wake-up):
    /// `setUp` makes and binds the sockets, adds them to the poller and returns the steps that
    /// own them. Returns once it did; rethrows its error once the thread has ended.
    ///
    /// - Throws: What `setUp` threw; ``StartRefused`` when started before, stopped before, or no
    ///   thread could be made.
    public func start(_ setUp: @escaping @Sendable (Poller) throws -> any SocketLoopSteps) throws {
        try monitor.withLock { state throws(StartRefused) in
            if state.pointee.stopRequestedBeforeStart { throw StartRefused(loop: name, reason: "stopped before it started") }
            guard state.pointee.phase == .idle else { throw StartRefused(loop: name, reason: "already started") }
            state.pointee.phase = .settingUp
        }
        let box = Unmanaged.passRetained(ThreadStart(loop: self, setUp: setUp)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { argument in
            let start = Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue()
            start.loop.run(start)
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<ThreadStart>.fromOpaque(box).release()
            monitor.withLock { state in
                state.pointee.phase = .idle
                monitor.broadcast()
            }
            throw StartRefused(loop: name, reason: "no thread: \(String(cString: strerror(rc)))")
        }
        let error = monitor.withLock { state -> (any Error)? in
            state.pointee.thread = thread
            // A stop() that came while the thread was being made waits for it from now on.
            monitor.broadcast()
            while state.pointee.phase == .settingUp { monitor.wait() }
            return state.pointee.setUpError
        }
        if let error {
            join()
            throw error
        }
    }

    /// Ends the loop: the steps finish the turn in progress, drain, and the thread is joined
    /// before it returns. Safe to call more than once, from several threads at once, and before
    /// ``start(_:)`` (which then refuses). On the loop's own thread it returns at once, and the
    /// loop ends after the turn in progress.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wakeUp.signal()
        if isLoopThread { return }
        monitor.withLock { state in
            if state.pointee.phase == .idle { state.pointee.stopRequestedBeforeStart = true }
        }
        join()
    }

    /// Wakes the threads in ``wait(timeoutMilliseconds:until:)``: call it (from any thread) after
    /// changing what their condition reads.
    public func notifyWaiters() {
        monitor.withLock { _ in monitor.broadcast() }
    }

    /// Waits until `done()` holds, the loop has ended (or never started), or the time is up (nil:
    /// no limit); returns `done()`. `done` is called with the loop's lock held: it may take the
    /// owner's locks but must not wait. Whoever makes it true calls ``notifyWaiters()``.
    public func wait(timeoutMilliseconds: Int?, until done: () -> Bool) -> Bool {
        let deadline = timeoutMilliseconds.map { Self.monotonicNanoseconds() + max(0, Int64($0)) * 1_000_000 }
        return monitor.withLock { state -> Bool in
            while true {
                if done() { return true }
                if state.pointee.phase == .idle || state.pointee.phase == .ended { return false }
                if !monitor.wait(deadlineNanoseconds: deadline) { return done() }
            }
        }
    }

    /// The thread's body: set-up, the turns, the drain.
    private func run(_ start: ThreadStart) {
        nameThisThread(name)
        loopThread.store(Self.currentThread, ordering: .relaxed)
        let poller = Poller()
        poller.add(fd: wakeUp.fd, events: .in)
        var steps: (any SocketLoopSteps)?
        do {
            steps = try start.setUp!(poller)
        } catch {
            monitor.withLock { state in
                state.pointee.setUpError = error
                state.pointee.phase = .ended
                monitor.broadcast()
            }
        }
        if let running = steps {
            monitor.withLock { state in
                state.pointee.phase = .running
                monitor.broadcast()
            }
            turns(running, poller)
            running.drain()
        }
        // Let go of the steps and the set-up (they hold the owner, whose deinit may stop this
        // loop) while this is still the loop's thread: such a stop returns at once.
        steps = nil
        start.setUp = nil
        loopThread.store(0, ordering: .relaxed)
        monitor.withLock { state in
            state.pointee.phase = .ended
            monitor.broadcast()
        }
    }

    private func turns(_ steps: any SocketLoopSteps, _ poller: Poller) {
        while !stopping.load(ordering: .acquiring) {
            var polled: Poller?
            if let timeout = steps.pollTimeout() {
                do {
                    _ = try poller.poll(timeoutMilliseconds: timeout)
                } catch {
                    steps.pollFailed(error)
                    return
                }
                // Drained before the turn looks at what other threads queued: a wake after
                // this point writes again, so nothing queued after the look waits unseen.
                if poller.revents(0).contains(.in) { wakeUp.drain() }
                // A stop that woke this poll ends the loop before another turn.
                if stopping.load(ordering: .acquiring) { return }
                polled = poller
            }
            if !steps.turn(polled) { return }
        }
    }

    /// Waits for the thread to end and joins it: one caller joins, the others wait for it.
    private func join() {
        let joiner = monitor.withLock { state -> pthread_t? in
            while true {
                // start() is making the thread: wait for it to say which.
                if state.pointee.phase == .settingUp && state.pointee.thread == nil {
                    monitor.wait()
                    continue
                }
                guard let thread = state.pointee.thread, !state.pointee.joined else { return nil }
                if !state.pointee.joinClaimed {
                    state.pointee.joinClaimed = true
                    return thread
                }
                monitor.wait()
            }
        }
        guard let joiner else { return }
        pthread_join(joiner, nil)
        monitor.withLock { state in
            state.pointee.joined = true
            monitor.broadcast()
        }
    }

    private static var currentThread: UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// What a new loop thread is handed (through pthread_create's one pointer).
private final class ThreadStart {
    let loop: SocketLoop
    var setUp: (@Sendable (Poller) throws -> any SocketLoopSteps)?

    init(loop: SocketLoop, setUp: @escaping @Sendable (Poller) throws -> any SocketLoopSteps) {
        self.loop = loop
        self.setUp = setUp
    }
}

/// A value behind a pthread mutex with a condition variable on the monotonic clock: what
/// threads wait on for a loop's phase, its join and its owner's conditions (`Locked` has no
/// wait). The value is reached through a pointer, so a read after a wait is a fresh load.
private final class ThreadMonitor<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Only touched with `mutex` held.
    private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)

    init(_ initial: Value) {
        value.initialize(to: initial)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        defer { pthread_condattr_destroy(&attributes) }
        #if canImport(Glibc)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Calls `body` with the value's address while holding the mutex; `body` may `wait`.
    func withLock<R, E: Error>(_ body: (UnsafeMutablePointer<Value>) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(value)
    }

    /// Inside `withLock`: wakes every waiter.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Inside `withLock`: sleeps until a broadcast or the deadline (nil: none); false once the
    /// deadline has passed.
    @discardableResult
    func wait(deadlineNanoseconds deadline: Int64? = nil) -> Bool {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        if SocketLoop.monotonicNanoseconds() >= deadline { return false }
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }
}
