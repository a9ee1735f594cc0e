import Foundation

/// Resident memory of a process as Linux reports it in /proc/PID/status.
public struct ProcessMemory: Sendable, Hashable {
    /// VmRSS: resident now, in bytes.
    public var residentBytes: UInt64
    /// VmHWM: the most it was ever resident, in bytes.
    public var peakResidentBytes: UInt64

    /// This process's figures (zeros where /proc is not there).
    public static func current() -> ProcessMemory {
        of(pid: nil)
    }

    /// Another process's figures, or this one's for nil (zeros when it cannot be read).
    public static func of(pid: Int32?) -> ProcessMemory {
        read(statusPath: "/proc/\(pid.map(String.init) ?? "self")/status") ?? ProcessMemory(residentBytes: 0, peakResidentBytes: 0)
    }

    /// Parses a /proc/PID/status file; nil when it cannot be read or has no VmRSS line.
    public static func read(statusPath: String) -> ProcessMemory? {
        guard let text = try? String(contentsOfFile: statusPath, encoding: .utf8) else { return nil }
        return parse(status: text)
    }

    /// Parses the text of a /proc/PID/status file (its "VmRSS:  1234 kB" lines).
    public static func parse(status text: String) -> ProcessMemory? {
        func kilobytes(_ key: String) -> UInt64? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return nil }
            return line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { UInt64($0) }
        }
        guard let rss = kilobytes("VmRSS") else { return nil }
        return ProcessMemory(residentBytes: rss * 1024, peakResidentBytes: (kilobytes("VmHWM") ?? rss) * 1024)
    }
}
