import Foundation

/// A source of memory-pressure readings for the cache.
public protocol MemoryPressureMonitor: Sendable {
    /// The name counted in CacheStats purges ("psi", "cgroup").
    var source: String { get }
    /// The level now; nil when the files cannot be read.
    func read() -> PressureLevel?
}

/// Linux pressure stall information: `/proc/pressure/memory` or a cgroup v2 `memory.pressure`.
///
/// Warning when tasks were stalled on memory for `warningPercent` of the last 10 s ("some"),
/// critical when all tasks were stalled for `criticalPercent` of it ("full").
public struct PSIMonitor: MemoryPressureMonitor {
    /// The PSI file read.
    public let path: String
    /// "some avg10" at or above this is a warning.
    public var warningPercent: Double
    /// "full avg10" at or above this is critical.
    public var criticalPercent: Double
    /// "psi".
    public var source: String { "psi" }

    /// A monitor of `path` with the given thresholds (percent of the last 10 s).
    public init(path: String = "/proc/pressure/memory", warningPercent: Double = 10, criticalPercent: Double = 10) {
        self.path = path
        self.warningPercent = warningPercent
        self.criticalPercent = criticalPercent
    }

    /// The (some, full) avg10 percentages of a PSI file's text.
    public static func parse(_ text: String) -> (some: Double, full: Double)? {
        var some: Double?, full = 0.0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let kind = fields.first,
                  let avg10 = fields.first(where: { $0.hasPrefix("avg10=") }).flatMap({ Double($0.dropFirst(6)) })
            else { continue }
            if kind == "some" { some = avg10 } else if kind == "full" { full = avg10 }
        }
        return some.map { ($0, full) }
    }

    /// The level from the file's avg10 values; nil when unreadable.
    public func read() -> PressureLevel? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let psi = Self.parse(text) else { return nil }
        if psi.full >= criticalPercent { return .critical }
        if psi.some >= warningPercent { return .warning }
        return .normal
    }
}

/// Memory used by a cgroup against its limit (v2 `memory.current`/`memory.max`, v1
/// `memory.usage_in_bytes`/`memory.limit_in_bytes`), not counting reclaimable inactive file pages.
public struct CgroupMemoryMonitor: MemoryPressureMonitor {
    /// memory.current (v2) or memory.usage_in_bytes (v1).
    public let usagePath: String
    /// memory.max (v2) or memory.limit_in_bytes (v1).
    public let limitPath: String
    /// memory.stat.
    public let statPath: String
    /// The memory.stat line of reclaimable page cache ("inactive_file" v2, "total_inactive_file" v1).
    public let inactiveKey: String
    /// Usage / limit at or above this is a warning.
    public var warningRatio: Double
    /// Usage / limit at or above this is critical.
    public var criticalRatio: Double
    /// "cgroup".
    public var source: String { "cgroup" }

    /// A monitor of the given files.
    public init(
        usagePath: String, limitPath: String, statPath: String, inactiveKey: String,
        warningRatio: Double = 0.85, criticalRatio: Double = 0.95
    ) {
        self.usagePath = usagePath
        self.limitPath = limitPath
        self.statPath = statPath
        self.inactiveKey = inactiveKey
        self.warningRatio = warningRatio
        self.criticalRatio = criticalRatio
    }

    /// The monitor for this process's memory cgroup (v2 first, then v1), if the files exist.
    public static func detect(root: String = "/sys/fs/cgroup") -> CgroupMemoryMonitor? {
        let fm = FileManager.default
        if let folder = CgroupPaths.folder(containing: "memory.max", mounts: [root, root + "/unified"], controller: "") {
            return CgroupMemoryMonitor(
                usagePath: folder + "/memory.current", limitPath: folder + "/memory.max",
                statPath: folder + "/memory.stat", inactiveKey: "inactive_file")
        }
        if fm.fileExists(atPath: root + "/memory"),
           let folder = CgroupPaths.folder(containing: "memory.limit_in_bytes", mounts: [root + "/memory"], controller: "memory") {
            return CgroupMemoryMonitor(
                usagePath: folder + "/memory.usage_in_bytes", limitPath: folder + "/memory.limit_in_bytes",
                statPath: folder + "/memory.stat", inactiveKey: "total_inactive_file")
        }
        return nil
    }

    /// The limit in bytes; nil when unlimited ("max", or v1's huge sentinel) or unreadable.
    public func limit() -> Int64? {
        guard let text = Self.text(limitPath), let value = Int64(text), value < Int64(1) << 60 else { return nil }
        return value
    }

    /// The level from usage (less inactive file pages) against the limit; normal without a limit.
    public func read() -> PressureLevel? {
        guard let usageText = Self.text(usagePath), let usage = Int64(usageText) else { return nil }
        guard let limit = limit(), limit > 0 else { return .normal }
        var inactive: Int64 = 0
        if let stat = Self.text(statPath) {
            for line in stat.split(separator: "\n") {
                let parts = line.split(separator: " ")
                if parts.count == 2, parts[0] == inactiveKey { inactive = Int64(parts[1]) ?? 0 }
            }
        }
        let ratio = Double(max(0, usage - inactive)) / Double(limit)
        if ratio >= criticalRatio { return .critical }
        if ratio >= warningRatio { return .warning }
        return .normal
    }

    private static func text(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Finds this process's cgroup folder from /proc/self/cgroup.
enum CgroupPaths {
    /// The path of `controller` ("" = the v2 unified hierarchy) in /proc/self/cgroup.
    static func path(controller: String, cgroupFile: String = "/proc/self/cgroup") -> String? {
        guard let text = try? String(contentsOfFile: cgroupFile, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let controllers = parts[1].split(separator: ",").map(String.init)
            if controller.isEmpty ? (parts[0] == "0" && parts[1].isEmpty) : controllers.contains(controller) {
                return String(parts[2])
            }
        }
        return nil
    }

    /// The process's own folder under one of `mounts` holding `file`; else the mount itself (a
    /// container sees its own cgroup as the root), else nil.
    static func folder(containing file: String, mounts: [String], controller: String) -> String? {
        let fm = FileManager.default
        let own = path(controller: controller).map { $0 == "/" ? "" : $0 } ?? ""
        for mount in mounts where fm.fileExists(atPath: "\(mount)\(own)/\(file)") { return mount + own }
        for mount in mounts where fm.fileExists(atPath: "\(mount)/\(file)") { return mount }
        return nil
    }
}

extension PSIMonitor {
    /// PSI of this process's cgroup v2 (`memory.pressure`), if the unified hierarchy is mounted.
    public static func cgroup(root: String = "/sys/fs/cgroup") -> PSIMonitor? {
        CgroupPaths.folder(containing: "memory.pressure", mounts: [root, root + "/unified"], controller: "")
            .map { PSIMonitor(path: $0 + "/memory.pressure") }
    }
}

/// The memory the cache may plan with: the cgroup limit when there is one, else the machine's RAM.
public func memoryLimitBytes() -> Int64 {
    let physical = Int64(ProcessInfo.processInfo.physicalMemory)
    if let cgroup = CgroupMemoryMonitor.detect()?.limit() { return min(cgroup, physical) }
    return physical
}
