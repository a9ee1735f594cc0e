#if canImport(Glibc)
import Glibc
#endif

/// Which CPUs the calling thread may run on, for work that must overlap with the thread that
/// started it rather than take turns with it on one CPU.
///
/// Linux wakes a thread on (or next to) the CPU of the thread that woke it. When a thread hands
/// a CPU-bound job (a digest) to another and then blocks in a write, the job often starts on
/// the writer's CPU first and holds it for a whole time slice (about 1 ms) while the other CPUs
/// idle, so the write starts late. `avoiding(cpu)` moves the calling thread off one CPU; the
/// returned value puts the thread's previous CPUs back.
public struct CPUAffinity: Sendable {
    /// The CPU the calling thread is running on, or nil where this is not known.
    public static func current() -> Int32? {
        #if canImport(Glibc)
        guard let getcpu = functions?.getcpu else { return nil }
        let cpu = getcpu()
        return cpu >= 0 ? cpu : nil
        #else
        return nil
        #endif
    }

    /// The CPUs the calling thread may run on (empty where this is not known).
    public static func allowed() -> [Int32] {
        #if canImport(Glibc)
        guard let functions else { return [] }
        var set = cpu_set_t()
        guard functions.get(0, MemoryLayout<cpu_set_t>.size, &set) == 0 else { return [] }
        return withUnsafeBytes(of: &set) { raw in
            let words = raw.bindMemory(to: UInt64.self)
            return (0..<setBits).filter { words[Int($0) / 64] & (UInt64(1) << (UInt64($0) % 64)) != 0 }
        }
        #else
        return []
        #endif
    }

    #if canImport(Glibc)
    private let previous: cpu_set_t?

    /// Moves the calling thread to the CPUs it may use other than `cpu`; does nothing when
    /// `cpu` is nil or is the only one it may use.
    public static func avoiding(_ cpu: Int32?) -> CPUAffinity {
        guard let cpu, cpu >= 0, cpu < CPUAffinity.setBits, let functions else { return CPUAffinity(previous: nil) }
        var allowed = cpu_set_t()
        guard functions.get(0, MemoryLayout<cpu_set_t>.size, &allowed) == 0 else { return CPUAffinity(previous: nil) }
        var others = allowed
        let word = Int(cpu) / 64, bit = UInt64(1) << (UInt64(cpu) % 64)
        let rest = withUnsafeMutableBytes(of: &others) { raw -> Bool in
            let words = raw.bindMemory(to: UInt64.self)
            guard words[word] & bit != 0 else { return false }
            words[word] &= ~bit
            return words.contains { $0 != 0 }
        }
        guard rest, functions.set(0, MemoryLayout<cpu_set_t>.size, &others) == 0 else { return CPUAffinity(previous: nil) }
        return CPUAffinity(previous: allowed)
    }

    /// Gives the thread back the CPUs it had before `avoiding`.
    public func restore() {
        guard var previous, let functions = Self.functions else { return }
        _ = functions.set(0, MemoryLayout<cpu_set_t>.size, &previous)
    }

    private static let setBits = Int32(MemoryLayout<cpu_set_t>.size * 8)

    private typealias GetCPU = @convention(c) () -> Int32
    private typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32

    private struct Functions: @unchecked Sendable {
        let getcpu: GetCPU
        let get: Affinity
        let set: Affinity
    }

    /// glibc's `sched_getcpu`, `sched_getaffinity` and `sched_setaffinity` (SwiftGlibc imports
    /// none of them: they need `_GNU_SOURCE`).
    private static let functions: Functions? = {
        let handle = UnsafeMutableRawPointer(bitPattern: 0)
        guard let getcpu = dlsym(handle, "sched_getcpu"), let get = dlsym(handle, "sched_getaffinity"),
              let set = dlsym(handle, "sched_setaffinity") else { return nil }
        return Functions(
            getcpu: unsafeBitCast(getcpu, to: GetCPU.self), get: unsafeBitCast(get, to: Affinity.self),
            set: unsafeBitCast(set, to: Affinity.self))
    }()
    #else
    private static let setBits: Int32 = 0
    public static func avoiding(_ cpu: Int32?) -> CPUAffinity { CPUAffinity() }
    public func restore() {}
    #endif
}
