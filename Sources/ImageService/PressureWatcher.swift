import Foundation
import Runtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Feeds memory-pressure readings into the cache from its own thread.
///
/// It reads every monitor each `interval`; where the kernel allows it, a PSI poll trigger
/// ("some 150 ms in 2 s") wakes it at once when pressure starts.
public final class PressureWatcher: Sendable {
    private let monitors: [any MemoryPressureMonitor]
    private let cache: ImageCache
    private let intervalMilliseconds: Int32
    private let triggerPath: String?
    private let logger: Logger
    private let stopping = Mutex(false)
    private let finished = Mutex(true)

    /// - Parameters:
    ///   - triggerPath: the PSI file to arm a poll trigger on (nil: sample on the interval only).
    public init(
        monitors: [any MemoryPressureMonitor], cache: ImageCache, intervalMilliseconds: Int32 = 1000,
        triggerPath: String? = "/proc/pressure/memory", logger: Logger
    ) {
        self.monitors = monitors
        self.cache = cache
        self.intervalMilliseconds = intervalMilliseconds
        self.triggerPath = triggerPath
        self.logger = logger
    }

    /// Reads every monitor once and feeds the cache (what the thread does each round).
    public func sampleOnce() {
        for monitor in monitors {
            if let level = monitor.read() { cache.observe(level, from: monitor.source) }
        }
    }

    /// Starts the thread.
    public func start() {
        guard !monitors.isEmpty else { return }
        finished.withLock { $0 = false }
        let thread = Thread { [self] in
            let trigger = armTrigger()
            defer {
                if trigger >= 0 { close(trigger) }
                finished.withLock { $0 = true }
            }
            while !stopping.withLock({ $0 }) {
                if trigger >= 0 {
                    var fds = [pollfd(fd: trigger, events: Int16(POLLPRI), revents: 0)]
                    _ = poll(&fds, 1, intervalMilliseconds)
                } else {
                    usleep(UInt32(intervalMilliseconds) * 1000)
                }
                sampleOnce()
            }
        }
        thread.name = "image-cache-pressure"
        thread.start()
    }

    /// Asks the thread to end; it does within one interval. It holds nothing that needs closing
    /// first, so stopping a service does not wait for it.
    public func stop() {
        stopping.withLock { $0 = true }
    }

    /// Whether the thread has ended (or never started).
    public var isFinished: Bool { finished.withLock { $0 } }

    /// Opens the PSI file with a trigger; -1 when the kernel or permissions do not allow it.
    func armTrigger() -> Int32 {
        guard let triggerPath else { return -1 }
        let fd = open(triggerPath, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        // 150 ms of stall within 2 s; unprivileged triggers need a window that is a multiple of 2 s.
        let trigger = "some 150000 2000000"
        let written = trigger.withCString { write(fd, $0, strlen($0) + 1) }
        guard written > 0 else {
            logger.debug("PSI trigger not available on \(triggerPath); sampling every \(intervalMilliseconds) ms")
            close(fd)
            return -1
        }
        return fd
    }
}
