import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner stats [item|image|capture-worker|thumbnail-worker|all]`: Metrics/Stats of each.
enum StatsCommand {
    static let parser = OptionParser(
        command: "stats",
        summary: "Shows what each process has served (calls by method and status, latency percentiles), its memory, and its parts' figures (queue depths, oldest job, cache, pending cascades). Default: item and image.",
        usage: "homepwner stats [item|image|capture-worker|thumbnail-worker|all] [--watch [--interval S]] [--json | --prometheus]",
        options: CommonOptions.endpoints + ProcessTargets.workerOptions + [
            OptionSpec(name: "watch", env: nil, defaultValue: nil,
                       help: "ask again every --interval seconds until Ctrl-C, with calls per second since the last look", isFlag: true),
            OptionSpec(name: "interval", env: nil, defaultValue: "2", help: "seconds between looks with --watch (0.2…3600)", valueName: "S"),
            OptionSpec(name: "prometheus", env: nil, defaultValue: nil,
                       help: "print the Prometheus text the scrape endpoint serves", isFlag: true),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let json = options.bool("json")
        let prometheus = options.bool("prometheus")
        let watch = options.bool("watch")
        let targets: [(name: String, endpoint: String)]
        let timeout: UInt32
        let interval: Double
        do {
            timeout = try CommonOptions.timeout(options)
            targets = try ProcessTargets.select(options)
            let text = try options.string("interval")
            guard let value = Double(text), value >= 0.2, value <= 3600 else {
                throw OptionError.invalidValue(option: "--interval", value: text, reason: "seconds, 0.2…3600")
            }
            interval = value
            if json && prometheus {
                throw OptionError.invalidValue(option: "--prometheus", value: "", reason: "choose one of --json and --prometheus")
            }
        } catch {
            printError("homepwner stats: \(error)")
            return ExitCode.usage
        }
        let clients: [RPCClient]
        do {
            clients = try ProcessTargets.connect(targets, context: try CLIContext.make(options))
        } catch {
            printError("homepwner stats: \(error)")
            return ExitCode.failure
        }
        defer { for client in clients { client.close() } }

        var previous: [ProcessStatsResponse?] = Array(repeating: nil, count: targets.count)
        var previousAt = monotonicNanoseconds()
        while true {
            let results = await ProcessTargets.call(clients, MetricsRPC.stats, ProcessStatsRequest(), timeout: timeout)
            let now = monotonicNanoseconds()
            let seconds = Double(now - previousAt) / 1e9
            var output = ""
            if json {
                output = jsonText(targets, results) + "\n"
            } else if prometheus {
                output = PrometheusText.render(results.compactMap { try? $0.get() })
            } else {
                if watch {
                    // Clear the screen on a terminal: one view that updates in place.
                    if isatty(STDOUT_FILENO) == 1 { output += "\u{1B}[H\u{1B}[2J" }
                    output += "every \(interval) s, Ctrl-C stops\n\n"
                }
                for (index, result) in results.enumerated() {
                    output += table(targets[index], result, previous: watch ? previous[index] : nil, seconds: seconds)
                }
            }
            FileHandle.standardOutput.write(Data(output.utf8))
            guard watch else {
                let unreachable = results.contains { if case .failure = $0 { true } else { false } }
                return unreachable ? ExitCode.unavailable : ExitCode.ok
            }
            previous = results.map { try? $0.get() }
            previousAt = now
            try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
        }
    }

    /// One process as text: a heading, the methods called, then the figures.
    static func table(
        _ target: (name: String, endpoint: String), _ result: Result<ProcessStatsResponse, RPCError>,
        previous: ProcessStatsResponse?, seconds: Double
    ) -> String {
        switch result {
        case let .failure(error):
            return "\(target.name) at \(target.endpoint): \(error.code.protoValueName ?? "ERROR"): \(error.message)\n\n"
        case let .success(stats):
            var text = "\(stats.process) \(stats.version) at \(target.endpoint): up \(duration(milliseconds: stats.uptimeMs)), "
                + "rss \(ImageCommand.byteCount(Int64(stats.rssBytes))) (peak \(ImageCommand.byteCount(Int64(stats.peakRssBytes))))"
            let server = stats.server ?? ServerCounters()
            text += ", \(server.received) requests, \(server.inFlight) in flight"
            if server.malformed + server.dropped + server.deadlineExceeded + server.rejectedBusy > 0 {
                text += " (malformed \(server.malformed), dropped \(server.dropped), deadline exceeded \(server.deadlineExceeded), busy \(server.rejectedBusy))"
            }
            text += "\n"
            let called = stats.methods.filter { $0.calls > 0 }
            if !called.isEmpty {
                var rows = [["METHOD", "CALLS", "PER S", "NOT OK", "P50", "P90", "P99", "MAX"]]
                for method in called {
                    let notOK = method.codes.filter { $0.code != .ok }.map { "\($0.code.protoValueName ?? String($0.code.rawValue)) \($0.count)" }
                    var rate = "-"
                    if let previous, seconds > 0 {
                        let before = previous.methods.first { $0.method == method.method }?.calls ?? 0
                        rate = String(format: "%.1f", Double(method.calls &- before) / seconds)
                    }
                    rows.append([
                        method.method.isEmpty ? "(no such method)" : method.method, String(method.calls), rate,
                        notOK.isEmpty ? "-" : notOK.joined(separator: ", "),
                        micros(method.p50Us), micros(method.p90Us), micros(method.p99Us), micros(method.maxUs),
                    ])
                }
                // The rate column only means something between two looks (--watch).
                text += columnText(previous == nil ? rows.map { row in row.enumerated().filter { $0.offset != 2 }.map(\.element) } : rows)
            }
            if !stats.figures.isEmpty {
                var rows = [["FIGURE", "VALUE"]]
                for figure in stats.figures {
                    let labels = figure.labels.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
                    rows.append([figure.name + (labels.isEmpty ? "" : "{\(labels)}"), PrometheusText.number(figure.value)])
                }
                text += columnText(rows)
            }
            return text + "\n"
        }
    }

    /// `[{"service", "endpoint", "stats": {…}} | {"service", "endpoint", "status", "error"}]` on one line.
    static func jsonText(_ targets: [(name: String, endpoint: String)], _ results: [Result<ProcessStatsResponse, RPCError>]) -> String {
        let items = zip(targets, results).map { target, result -> String in
            let head = "{\"service\": \(jsonString(target.name)), \"endpoint\": \(jsonString(target.endpoint)), "
            switch result {
            case let .success(stats):
                let body = (try? ProtoJSON.decode(
                    stats.serializedBytes(), as: ProcessStatsResponse.protoName,
                    options: .init(useProtoNames: true, prettyPrinted: false))) ?? "{}"
                return head + "\"stats\": \(body)}"
            case let .failure(error):
                return head + "\"status\": \(jsonString(error.code.protoValueName ?? "ERROR")), \"error\": \(jsonString(error.message))}"
            }
        }
        return "[" + items.joined(separator: ", ") + "]"
    }

    /// "850µs", "12.3ms", "2.10s".
    static func micros(_ value: UInt64) -> String {
        if value < 1000 { return "\(value)µs" }
        if value < 1_000_000 { return String(format: "%.1fms", Double(value) / 1000) }
        return String(format: "%.2fs", Double(value) / 1e6)
    }

}
