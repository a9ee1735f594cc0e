import Foundation
import Runtime
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// Feeds memory-pressure readings into the cache from its own thread, joined on stop.
///
/// It reads every monitor each `interval`; where the kernel allows it, a PSI poll trigger
/// ("some 150 ms in 2 s") wakes it at once when pressure starts.
public final class PressureWatcher: LifecycleService {
    public var name: String { "image-cache-pressure" }
    private let monitors: [any MemoryPressureMonitor]
    private let cache: ImageCache
    private let intervalMilliseconds: Int32
    private let triggerPath: String?
    private let logger: Logger
    private let thread: IntervalThread
    private let finished = Locked(true)

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
        thread = IntervalThread(name: "image-cache-pressure", intervalMilliseconds: intervalMilliseconds) {
            Self.sample(monitors, into: cache)
        }
    }

    /// Reads every monitor once and feeds the cache (what the thread does each round).
    public func sampleOnce() {
        Self.sample(monitors, into: cache)
    }

    private static func sample(_ monitors: [any MemoryPressureMonitor], into cache: ImageCache) {
        for monitor in monitors {
            if let level = monitor.read() { cache.observe(level, from: monitor.source) }
        }
    }

    /// Starts the thread (none without monitors); a failure to start it is logged, and the
    /// cache then sees no pressure readings.
    public func start() {
        guard !monitors.isEmpty else { return }
        finished.withLock { $0 = false }
        let trigger = armTrigger()
        do {
            try thread.start(watching: trigger) { [self] in
                if trigger >= 0 { close(trigger) }
                finished.withLock { $0 = true }
            }
        } catch {
            if trigger >= 0 { close(trigger) }
            finished.withLock { $0 = true }
            logger.error("memory-pressure watcher not started: \(error)")
        }
    }

    /// Wakes the thread and waits for it to end; safe to call twice.
    public func stop() {
        thread.stop()
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
