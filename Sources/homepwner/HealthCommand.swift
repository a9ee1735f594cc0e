import Clients
import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner health [item|image|capture-worker|thumbnail-worker|all]`.
enum HealthCommand {
    static let parser = OptionParser(
        command: "health",
        summary: "Calls Health/Check on the named services (default: item and image).",
        usage: "homepwner health [item|image|capture-worker|thumbnail-worker|all] [options]",
        options: CommonOptions.endpoints + ProcessTargets.workerOptions,
        allowsPositionals: true)

    struct Row {
        let name: String
        let endpoint: String
        let result: Result<HealthCheckResponse, RPCError>
    }

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let json = options.bool("json")
        let targets: [(String, String)]
        let timeout: UInt32
        do {
            timeout = try CommonOptions.timeout(options)
            targets = try ProcessTargets.select(options).map { ($0.name, $0.endpoint) }
        } catch {
            printError("homepwner health: \(error)")
            return ExitCode.usage
        }

        let rows: [Row]
        do {
            rows = try await ProcessTargets.call(targets, HealthRPC.check, HealthCheckRequest(), context: try CLIContext.make(options), timeout: timeout)
                .map { Row(name: $0.name, endpoint: $0.endpoint, result: $0.result) }
        } catch {
            printError("homepwner health: \(error)")
            return ExitCode.failure
        }
        json ? printJSON(rows) : printTable(rows)
        let allServing = rows.allSatisfy { row in
            if case let .success(response) = row.result { return response.status == .serving }
            return false
        }
        if allServing { return ExitCode.ok }
        let unreachable = rows.contains { if case .failure = $0.result { return true } else { return false } }
        return unreachable ? ExitCode.unavailable : ExitCode.failure
    }

    /// The status as printed: DEGRADED for a process that serves with conditions (it still
    /// serves, so the exit code stays 0: a health check must not restart it for what a restart
    /// cannot fix).
    static func statusText(_ response: HealthCheckResponse) -> String {
        if response.status == .serving && !response.conditions.isEmpty { return "DEGRADED" }
        return response.status.protoValueName ?? String(response.status.rawValue)
    }

    static func printTable(_ rows: [Row]) {
        var lines = [["SERVICE", "STATUS", "ENDPOINT", "VERSION", "UPTIME"]]
        var conditions: [String] = []
        for row in rows {
            switch row.result {
            case let .success(response):
                lines.append([
                    row.name, statusText(response), row.endpoint, response.version, duration(milliseconds: response.uptimeMs),
                ])
                conditions += response.conditions.map { "\(row.name): \($0.name): \($0.message)" }
            case let .failure(error):
                lines.append([row.name, error.code.protoValueName ?? "ERROR", row.endpoint, "-", error.message])
            }
        }
        printColumns(lines)
        for condition in conditions { print(condition) }
    }

    static func printJSON(_ rows: [Row]) {
        let items = rows.map { row -> String in
            switch row.result {
            case let .success(response):
                return "{\"service\": \(jsonString(row.name)), \"endpoint\": \(jsonString(row.endpoint)), "
                    + "\"status\": \(jsonString(statusText(response))), "
                    + "\"version\": \(jsonString(response.version)), \"uptime_ms\": \(response.uptimeMs), \"conditions\": ["
                    + response.conditions.map {
                        "{\"name\": \(jsonString($0.name)), \"message\": \(jsonString($0.message)), \"since_unix_ms\": \($0.sinceUnixMs)}"
                    }.joined(separator: ", ") + "]}"
            case let .failure(error):
                return "{\"service\": \(jsonString(row.name)), \"endpoint\": \(jsonString(row.endpoint)), "
                    + "\"status\": \(jsonString(error.code.protoValueName ?? "ERROR")), \"error\": \(jsonString(error.message))}"
            }
        }
        print("[\n  " + items.joined(separator: ",\n  ") + "\n]")
    }
}

/// Prints rows as left-aligned columns.
func printColumns(_ rows: [[String]]) {
    print(columnText(rows), terminator: "")
}

/// Rows as left-aligned columns, each line ending in a newline.
func columnText(_ rows: [[String]]) -> String {
    guard let first = rows.first else { return "" }
    let widths = (0..<first.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    return rows.map { row in
        row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index] + 2, withPad: " ", startingAt: 0)
        }.joined() + "\n"
    }.joined()
}

/// "3h12m", "4m05s", "12s".
func duration(milliseconds: UInt64) -> String {
    let seconds = milliseconds / 1000
    if seconds >= 3600 { return "\(seconds / 3600)h\(String(format: "%02d", (seconds % 3600) / 60))m" }
    if seconds >= 60 { return "\(seconds / 60)m\(String(format: "%02d", seconds % 60))s" }
    return "\(seconds)s"
}
