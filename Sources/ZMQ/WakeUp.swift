import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pipe that any thread can signal to wake an I/O thread blocked in `Poller.poll`.
///
/// Add `fd` to the poller with `.in`; after it reports ready, call `drain()` on the polling thread.
/// (A pipe rather than an eventfd because Glibc does not import `<sys/eventfd.h>`.)
public final class WakeUp: Sendable {
    /// The read end, to poll for `.in`.
    public let fd: Int32
    // The write end, used by `signal()`.
    private let writeFD: Int32
    // True from the first signal until the next drain.
    private let pending = Atomic<Bool>(false)

    /// Creates the non-blocking, close-on-exec pipe.
    public init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw ZMQError(code: errno, operation: "pipe") }
        for fd in fds {
            // Non-blocking so a full pipe never blocks signal() and an empty one never blocks drain().
            let flags = fcntl(fd, F_GETFL)
            if flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1 || fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 {
                let error = ZMQError(code: errno, operation: "fcntl(pipe)")
                closeFD(fds[0])
                closeFD(fds[1])
                throw error
            }
        }
        fd = fds[0]
        writeFD = fds[1]
    }

    deinit {
        closeFD(fd)
        closeFD(writeFD)
    }

    /// Makes `fd` readable; thread-safe, callable from any thread, any number of times.
    /// Only the first signal after a `drain()` writes to the pipe: a busy I/O thread is not
    /// woken once per message.
    public func signal() {
        guard !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        while true {
            if write(writeFD, &byte, 1) >= 0 { return }
            // EAGAIN means the pipe is full, i.e. already signalled: nothing more to do.
            if errno != EINTR { return }
        }
    }

    /// Consumes all pending signals so `fd` stops polling readable; call from the polling thread.
    /// Call it before looking at what the signallers queued: a signal after this point
    /// writes again, so nothing queued after the look is missed.
    public func drain() {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while true {
            let n = withUnsafeMutableBytes(of: &buffer) { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { continue }
            // 0 cannot happen while we hold the write end; -1/EAGAIN means empty.
            if n == -1 && errno == EINTR { continue }
            break
        }
        pending.store(false, ordering: .releasing)
    }
}

/// Closes a file descriptor (a free function because inside a class `close` could be ambiguous).
private func closeFD(_ fd: Int32) {
    // Only EBADF/EINTR are possible; retrying close after EINTR is wrong on Linux.
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}
