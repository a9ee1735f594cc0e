import Dispatch
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// glibc malloc settings for processes that move multi-megabyte messages, and handing freed
/// memory back to the operating system.
///
/// By default glibc serves each allocation over 128 KiB (raised up to 32 MiB as such blocks are
/// freed) with a fresh `mmap` and returns the heap's free top beyond twice that: a process that
/// receives, decodes and sends a 20 MB photo then takes a page fault and a page clear for
/// every 4 KiB of every buffer, every time (in `ops/bench images`, more time than the copies
/// themselves). Threads other than the main one also allocate from arenas of their own, whose
/// heaps are unmapped whenever they fall empty, so a 20 MB buffer allocated on a pool thread
/// faults in afresh each time. With `forLargeMessages()`, blocks up to 32 MiB come from the
/// heap, every thread uses the one main heap (small allocations still come from per-thread
/// caches without a lock), the heap grows 64 MiB at a time, and up to 128 MiB of freed heap
/// is kept for reuse;
/// `releaseFreedMemory()` (after a cache purge, under memory pressure) hands all of it back.
public enum MallocTuning {
    /// Blocks up to this size come from the heap (glibc's largest allowed dynamic threshold).
    public static let mmapThresholdBytes: Int32 = 32 << 20
    /// Free memory at the heap's top kept for reuse instead of returned at once.
    public static let trimThresholdBytes: Int32 = 128 << 20
    /// Malloc arenas: one, the main heap, where the settings here apply.
    public static let arenas: Int32 = 1
    /// Extra heap obtained whenever the heap grows (address space; pages count only once used),
    /// so a run of multi-megabyte allocations does not move the heap's end for each one.
    public static let topPadBytes: Int32 = 64 << 20

    /// Applies the settings to this process; idempotent. Returns false where glibc's `mallopt`
    /// is not available (other C libraries keep their defaults).
    @discardableResult
    public static func forLargeMessages() -> Bool {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        // <malloc.h>: M_TRIM_THRESHOLD -1, M_TOP_PAD -2, M_MMAP_THRESHOLD -3, M_ARENA_MAX -8
        // (SwiftGlibc does not import it).
        return mallopt(-3, mmapThresholdBytes) == 1 && mallopt(-1, trimThresholdBytes) == 1
            && mallopt(-2, topPadBytes) == 1 && mallopt(-8, arenas) == 1
        #else
        return false
        #endif
    }

    /// How often a service hands freed heap back (`trimForTheProcess`): the heap's free pages stay
    /// for reuse between trims, so a burst of large messages costs no page faults, and RSS
    /// follows what is in use rather than the heap's highest point (which otherwise only grows:
    /// freed blocks between live ones are never returned by glibc on its own).
    public static let trimIntervalSeconds = 30.0

    /// Calls `releaseFreedMemory()` every `seconds` on a background queue for as long as the
    /// returned trimmer is kept (dropping it stops the timer: a dispatch timer no one holds is
    /// freed at once and never fires, which is why a process keeps its own in `trimForTheProcess`).
    public static func startTrimming(every seconds: Double = trimIntervalSeconds) -> HeapTrimmer {
        HeapTrimmer(every: seconds)
    }

    /// Starts the process's own trimmer, which runs for the life of the process; a second call
    /// replaces it (with another interval). Services and `homepwner up` call it once at start.
    public static func trimForTheProcess(every seconds: Double = trimIntervalSeconds) {
        let trimmer = HeapTrimmer(every: seconds)
        processTrimmer.withLock { $0 = trimmer }
    }

    private static let processTrimmer = Locked<HeapTrimmer?>(nil)

    /// Returns every freed heap page to the operating system (`malloc_trim(0)`), so RSS falls.
    public static func releaseFreedMemory() {
        #if canImport(Glibc)
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            typealias MallocTrim = @convention(c) (Int) -> Int32
            _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        }
        #endif
    }
}

/// A timer that hands freed heap back every so often (`MallocTuning.startTrimming`); it stops
/// when released. Unchecked Sendable: its one stored timer is only cancelled, which libdispatch
/// allows from any thread.
public final class HeapTrimmer: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    private static let fired = Atomic<Int>(0)

    /// How many times any trimmer of this process has trimmed.
    public static var firings: Int { fired.load(ordering: .relaxed) }

    init(every seconds: Double) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "heap-trim", qos: .utility))
        let interval = DispatchTimeInterval.milliseconds(max(1, Int(seconds * 1000)))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(max(1, Int(seconds * 100))))
        timer.setEventHandler {
            MallocTuning.releaseFreedMemory()
            Self.fired.add(1, ordering: .relaxed)
        }
        timer.resume()
        self.timer = timer
    }

    deinit { timer.cancel() }
}
