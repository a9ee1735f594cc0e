import Foundation
import Locking
import Testing
@testable import ImageService

@Suite struct LRUCacheTests {
    @Test func evictsTheLeastRecentlyUsedFirst() {
        var lru = LRUCache()
        let entry = LRUCache.cost(key: "a", value: [UInt8](repeating: 0, count: 100))
        lru.insert("a", [UInt8](repeating: 0, count: 100), budget: 3 * entry)
        lru.insert("b", [UInt8](repeating: 1, count: 100), budget: 3 * entry)
        lru.insert("c", [UInt8](repeating: 2, count: 100), budget: 3 * entry)
        #expect(lru.get("a") != nil)  // a is now the most recent; b the least
        let evicted = lru.insert("d", [UInt8](repeating: 3, count: 100), budget: 3 * entry)
        #expect(evicted == 1)
        #expect(!lru.contains("b"))
        #expect(lru.contains("a") && lru.contains("c") && lru.contains("d"))
        #expect(lru.bytes == 3 * entry)
    }

    @Test func budgetIsNeverExceededUnderRandomUse() {
        var lru = LRUCache()
        var generator = SystemRandomNumberGenerator()
        let budget = 50_000
        for step in 0..<5_000 {
            let key = "k\(Int.random(in: 0..<200, using: &generator))"
            switch step % 4 {
            case 0, 1: lru.insert(key, [UInt8](repeating: 7, count: Int.random(in: 0..<4_000, using: &generator)), budget: budget)
            case 2: _ = lru.get(key)
            default: lru.remove(key)
            }
            #expect(lru.bytes <= budget)
        }
        lru.trim(to: 0)
        #expect(lru.count == 0 && lru.bytes == 0)
    }
}

@Suite struct PressureStateMachineTests {
    @Test func warningHalvesCriticalEmptiesAndNormalRestores() {
        var machine = PressureStateMachine()
        #expect(machine.budget(of: 1000) == 1000)
        #expect(machine.observe(.warning, from: "psi") == .shrinkToHalf)
        #expect(machine.budget(of: 1000) == 500)
        #expect(machine.observe(.warning, from: "psi") == .none)
        #expect(machine.observe(.critical, from: "cgroup") == .empty)
        #expect(machine.budget(of: 1000) == 0)
        // psi falls back, but cgroup is still critical: the highest source counts.
        #expect(machine.observe(.normal, from: "psi") == .none)
        #expect(machine.level == .critical)
        #expect(machine.observe(.normal, from: "cgroup") == .none)
        #expect(machine.level == .normal && machine.budget(of: 1000) == 1000)
        #expect(machine.observe(.critical, from: "psi") == .empty)
    }
}

/// A monitor whose level the test sets.
final class FakeMonitor: MemoryPressureMonitor {
    let level = Locked(PressureLevel.normal)
    var source: String { "psi" }
    func read() -> PressureLevel? { level.withLock { $0 } }
    func set(_ value: PressureLevel) { level.withLock { $0 = value } }
}

@Suite struct ImageCacheTests {
    static func fill(_ cache: ImageCache, count: Int, size: Int) {
        for i in 0..<count { cache.insert("key-\(i)", [UInt8](repeating: UInt8(i & 0xFF), count: size)) }
    }

    @Test func injectedMonitorWarningShrinksToHalfAndCriticalEmpties() {
        let cache = ImageCache(budgetBytes: 1_000_000)
        let monitor = FakeMonitor()
        let watcher = PressureWatcher(monitors: [monitor], cache: cache, triggerPath: nil, logger: testLogger)
        Self.fill(cache, count: 40, size: 20_000)
        let full = cache.statistics
        #expect(full.bytes > 700_000 && full.bytes <= 1_000_000)

        monitor.set(.warning)
        watcher.sampleOnce()
        var stats = cache.statistics
        #expect(stats.bytes <= 500_000)
        #expect(stats.bytes > 0)
        #expect(stats.budgetBytes == 500_000)
        #expect(stats.purges["warning"] == 1 && stats.purges["psi"] == 1)

        // While the warning lasts the cache stays within half its budget.
        Self.fill(cache, count: 80, size: 20_000)
        #expect(cache.statistics.bytes <= 500_000)

        monitor.set(.critical)
        watcher.sampleOnce()
        stats = cache.statistics
        #expect(stats.entries == 0 && stats.bytes == 0)
        #expect(stats.purges["critical"] == 1 && stats.purges["psi"] == 2)
        cache.insert("while-critical", [1, 2, 3])
        #expect(cache.statistics.entries == 0)

        monitor.set(.normal)
        watcher.sampleOnce()
        cache.insert("after", [1, 2, 3])
        #expect(cache.statistics.entries == 1)
        #expect(cache.statistics.budgetBytes == 1_000_000)
    }

    @Test func watcherThreadFeedsTheCacheUntilStopped() async throws {
        let cache = ImageCache(budgetBytes: 1_000_000)
        Self.fill(cache, count: 10, size: 20_000)
        let monitor = FakeMonitor()
        monitor.set(.critical)
        let watcher = PressureWatcher(
            monitors: [monitor], cache: cache, intervalMilliseconds: 20, triggerPath: nil, logger: testLogger)
        watcher.start()
        // No timing assertion: wait (up to 10 s) for the thread to act.
        for _ in 0..<1000 where cache.statistics.entries > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(cache.statistics.entries == 0)
        #expect(cache.statistics.purges["critical"] == 1)
        watcher.stop()
        for _ in 0..<1000 where !watcher.isFinished { try await Task.sleep(for: .milliseconds(10)) }
        #expect(watcher.isFinished)
    }

    @Test func manualPurgeCountsReasonAndFreesBytes() {
        let cache = ImageCache(budgetBytes: 1_000_000)
        Self.fill(cache, count: 40, size: 20_000)
        let before = cache.statistics.bytes
        let warning = cache.purge(.warning, reason: "manual")
        #expect(warning.bytes <= 500_000)
        #expect(warning.freedBytes == before - warning.bytes)
        let critical = cache.purge(.critical, reason: "manual")
        #expect(critical.entries == 0 && critical.bytes == 0)
        #expect(cache.statistics.purges == ["warning": 1, "critical": 1, "manual": 2])
    }

    @Test func hitsMissesAndEvictionsAreCounted() {
        let cache = ImageCache(budgetBytes: 10_000)
        cache.insert("a", [UInt8](repeating: 1, count: 2_000))
        #expect(cache.get("a") != nil)
        #expect(cache.get("b") == nil)
        for i in 0..<10 { cache.insert("x\(i)", [UInt8](repeating: 1, count: 2_000)) }
        let stats = cache.statistics
        #expect(stats.hits == 1 && stats.misses == 1)
        #expect(stats.evictions > 0)
        #expect(stats.bytes <= 10_000)
        // Larger than a quarter of the budget: never cached.
        cache.insert("huge", [UInt8](repeating: 1, count: 3_000))
        #expect(cache.get("huge") == nil)
    }

    /// Whether this kernel reports memory pressure (CONFIG_PSI, not disabled with psi=0).
    static let machineHasPSI = FileManager.default.isReadableFile(atPath: "/proc/pressure/memory")
    static let noPSI: Comment = "this kernel has no /proc/pressure/memory (built without CONFIG_PSI or booted with psi=0): the cache falls back to the cgroup's memory events"

    @Test(.enabled(if: machineHasPSI, noPSI))
    func realPSIFileOfThisMachineIsReadAndParsed() throws {
        let text = try String(contentsOfFile: "/proc/pressure/memory", encoding: .utf8)
        let parsed = try #require(PSIMonitor.parse(text), "PSI text not understood: \(text)")
        // Percentages of the last 10 s; all tasks stalled ("full") implies some were ("some").
        #expect((0...100).contains(parsed.some) && (0...100).contains(parsed.full), "\(parsed)")
        #expect(parsed.full <= parsed.some + 0.01, "\(parsed)")
        // An impossible threshold can never be reached; zero is always reached.
        #expect(try #require(PSIMonitor(warningPercent: 101, criticalPercent: 101).read()) == .normal)
        #expect(try #require(PSIMonitor(warningPercent: 0, criticalPercent: 101).read()) == .warning)
        #expect(try #require(PSIMonitor(warningPercent: 0, criticalPercent: 0).read()) == .critical)
    }

    @Test func missingPSIFileReadsAsNoSignalInsteadOfFailing() {
        #expect(PSIMonitor(path: "/nonexistent/pressure/memory").read() == nil)
        #expect(PSIMonitor.parse("") == nil)
    }

    @Test(.enabled(if: machineHasPSI, noPSI))
    func psiPollTriggerArmsOnThisMachinesFiles() throws {
        let cache = ImageCache(budgetBytes: 1000)
        let cgroup = try #require(PSIMonitor.cgroup(), "this process's cgroup has no memory.pressure file")
        for path in ["/proc/pressure/memory", cgroup.path] {
            let watcher = PressureWatcher(monitors: [PSIMonitor(path: path)], cache: cache, triggerPath: path, logger: testLogger)
            let fd = watcher.armTrigger()
            #expect(fd >= 0, "no PSI trigger on \(path)")
            if fd >= 0 { close(fd) }
        }
    }

    @Test func psiTextParsesSomeAndFull() {
        let text = "some avg10=12.50 avg60=3.00 avg300=0.50 total=123\nfull avg10=4.25 avg60=1.00 avg300=0.10 total=45\n"
        let parsed = PSIMonitor.parse(text)
        #expect(parsed?.some == 12.5 && parsed?.full == 4.25)
        #expect(PSIMonitor.parse("garbage") == nil)
    }

    @Test func cgroupPSIOfThisProcessIsFoundAndRead() throws {
        // cgroup v1 with the v2 hierarchy mounted at /sys/fs/cgroup/unified on this machine.
        let monitor = try #require(PSIMonitor.cgroup())
        #expect(monitor.path.hasSuffix("/memory.pressure"))
        #expect(monitor.read() != nil)
    }

    @Test func procSelfCgroupLinesAreParsed() throws {
        let folder = try TemporaryFolder()
        let file = folder.path + "/cgroup"
        try "4:memory:/box/a\n3:cpu,cpuacct:/box\n0::/box/b\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(CgroupPaths.path(controller: "memory", cgroupFile: file) == "/box/a")
        #expect(CgroupPaths.path(controller: "cpuacct", cgroupFile: file) == "/box")
        #expect(CgroupPaths.path(controller: "", cgroupFile: file) == "/box/b")
        #expect(CgroupPaths.path(controller: "pids", cgroupFile: file) == nil)
    }

    @Test func realCgroupMonitorReadsThisMachine() throws {
        let monitor = try #require(CgroupMemoryMonitor.detect())
        #expect(monitor.read() != nil)
        #expect(memoryLimitBytes() > 0)
    }

    @Test func cgroupMonitorComparesUsageWithoutInactiveFileToLimit() throws {
        let folder = try TemporaryFolder()
        let p = folder.path
        try "1000\n".write(toFile: p + "/limit", atomically: true, encoding: .utf8)
        try "cache 5\ninactive_file 100\n".write(toFile: p + "/stat", atomically: true, encoding: .utf8)
        let monitor = CgroupMemoryMonitor(usagePath: p + "/usage", limitPath: p + "/limit", statPath: p + "/stat", inactiveKey: "inactive_file")
        for (usage, level) in [(500, PressureLevel.normal), (960, .warning), (1060, .critical)] {
            try "\(usage)\n".write(toFile: p + "/usage", atomically: true, encoding: .utf8)
            #expect(monitor.read() == level, "usage \(usage)")
        }
        try "max\n".write(toFile: p + "/limit", atomically: true, encoding: .utf8)
        #expect(monitor.read() == .normal)
    }
}
