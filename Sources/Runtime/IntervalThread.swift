import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own (a one-thread ``BlockingPool``) that runs `tick` every interval, and at
/// once when a file descriptor it watches reports urgent data (a PSI poll trigger), until
/// ``stop()`` wakes it and the pool joins it.
///
/// It sleeps in `poll(2)`, so neither a tick nor a stop waits out the interval.
public final class IntervalThread: LifecycleService {
    /// The thread's name, and this service's.
    public let name: String
    private let intervalMilliseconds: Int32
    private let tick: @Sendable () -> Void
    private let thread: BlockingPool
    /// The pipe whose write end `stop()` writes to; nil until `start()`.
    private let wakePipe = Locked<(read: Int32, write: Int32)?>(nil)

    /// A thread named `name` ticking every `intervalMilliseconds`; nothing runs before ``start(watching:)``.
    public init(name: String, intervalMilliseconds: Int32, tick: @escaping @Sendable () -> Void) {
        self.name = name
        self.intervalMilliseconds = intervalMilliseconds
        self.tick = tick
        thread = BlockingPool(name: name, count: 1)
    }

    /// Starts the thread, ticking on the interval only. Call once.
    public func start() throws {
        try start(watching: -1)
    }

    /// Starts the thread; `trigger` (≥ 0) also wakes it when it reports POLLPRI. Call once.
    ///
    /// - Parameter onExit: Runs as the ticking ends (closes `trigger`).
    public func start(watching trigger: Int32 = -1, onExit: @escaping @Sendable () -> Void = {}) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let wake = ends[0], intervalMilliseconds = intervalMilliseconds, tick = tick
        wakePipe.withLock { $0 = (ends[0], ends[1]) }
        thread.start()
        thread.submit({
            defer { onExit() }
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            if trigger >= 0 { fds.append(pollfd(fd: trigger, events: Int16(POLLPRI), revents: 0)) }
            while true {
                _ = poll(&fds, nfds_t(fds.count), intervalMilliseconds)
                if fds[0].revents != 0 { return }
                tick()
            }
        }, refused: { _ in onExit() })
    }

    /// Wakes the thread, waits for it to end and closes its pipe; safe to call twice,
    /// and before ``start(watching:onExit:)`` (then it does nothing).
    public func stop() {
        let wake = wakePipe.withLock { pipe in
            defer { pipe = nil }
            return pipe
        }
        guard let wake else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        thread.stop()
        close(wake.read)
        close(wake.write)
    }
}
