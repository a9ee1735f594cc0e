import Foundation
import Proto

/// Metrics/Stats answers in the Prometheus text exposition format 0.0.4, as the scrape
/// endpoint serves them: every family once with its HELP and TYPE, each sample labelled with
/// the process it came from (`homepwner up` serves four in one text).
public enum PrometheusText {
    /// The text of one or more processes' stats.
    public static func render(_ processes: [ProcessStatsResponse]) -> String {
        var families: [String: Family] = [:]
        var order: [String] = []
        func add(_ name: String, _ help: String, _ type: String, _ labels: [(String, String)], _ value: Double, suffix: String = "") {
            if families[name] == nil {
                families[name] = Family(help: help, type: type)
                order.append(name)
            }
            families[name]!.samples.append(Sample(name: name + suffix, labels: labels, value: value))
        }
        for stats in processes {
            let process = ("process", stats.process)
            add("homepwner_process_info", "The process and its version (always 1).", "gauge",
                [process, ("version", stats.version)], 1)
            add("homepwner_uptime_seconds", "Time since the process's RPC server was made.", "gauge",
                [process], Double(stats.uptimeMs) / 1000)
            add("homepwner_resident_memory_bytes", "Resident memory (VmRSS).", "gauge", [process], Double(stats.rssBytes))
            add("homepwner_peak_resident_memory_bytes", "Peak resident memory (VmHWM).", "gauge",
                [process], Double(stats.peakRssBytes))
            let server = stats.server ?? ServerCounters()
            let counters: [(String, String, UInt64)] = [
                ("received", "Requests read, well-formed or not.", server.received),
                ("replied", "Replies handed to the socket.", server.replied),
                ("malformed", "Requests whose frames or header did not parse.", server.malformed),
                ("dropped", "Replies dropped: nothing to address, or the peer was gone.", server.dropped),
                ("deadline_exceeded", "Calls answered DEADLINE_EXCEEDED.", server.deadlineExceeded),
                ("rejected_busy", "Calls refused because too many calls or bytes were in flight.", server.rejectedBusy),
                ("replayed", "Mutating calls answered from the idempotency cache.", server.replayed),
            ]
            for (name, help, value) in counters {
                add("homepwner_rpc_\(name)_total", help, "counter", [process], Double(value))
            }
            add("homepwner_rpc_in_flight", "Handlers running now.", "gauge", [process], Double(server.inFlight))
            add("homepwner_rpc_in_flight_bytes", "Request bytes the running handlers hold.", "gauge",
                [process], Double(server.inFlightBytes))
            for method in stats.methods where method.calls > 0 {
                let name = method.method.isEmpty ? "none" : method.method
                let labels = [process, ("method", name)]
                for count in method.codes {
                    add("homepwner_rpc_requests_total", "Calls answered, by method and status code.", "counter",
                        labels + [("code", count.code.description)], Double(count.count))
                }
                let duration = "homepwner_rpc_request_duration_seconds"
                let help = "Time from reading a request to handing its reply to the socket."
                for (quantile, micros) in [("0.5", method.p50Us), ("0.9", method.p90Us), ("0.99", method.p99Us)] {
                    add(duration, help, "summary", labels + [("quantile", quantile)], Double(micros) / 1e6)
                }
                add(duration, help, "summary", labels, Double(method.totalUs) / 1e6, suffix: "_sum")
                add(duration, help, "summary", labels, Double(method.calls), suffix: "_count")
                add("homepwner_rpc_request_bytes_total", "Bytes of request bodies read.", "counter",
                    labels, Double(method.requestBytes))
                add("homepwner_rpc_reply_bytes_total", "Bytes of reply bodies sent.", "counter",
                    labels, Double(method.replyBytes))
            }
            for figure in stats.figures {
                let type = figure.kind == .counter ? "counter" : "gauge"
                add(figure.name, figure.help, type, [process] + figure.labels.map { ($0.name, $0.value) }, figure.value)
            }
        }
        var text = ""
        for name in order {
            let family = families[name]!
            text += "# HELP \(name) \(escapeHelp(family.help))\n# TYPE \(name) \(family.type)\n"
            for sample in family.samples {
                text += sample.name
                if !sample.labels.isEmpty {
                    text += "{" + sample.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
                }
                text += " \(number(sample.value))\n"
            }
        }
        return text
    }

    private struct Family {
        let help: String
        let type: String
        var samples: [Sample] = []
    }

    private struct Sample {
        let name: String
        let labels: [(String, String)]
        let value: Double
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escapeLabel(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// HELP text with `\` and newlines escaped.
    static func escapeHelp(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Integers without a fraction; others as Swift prints them; NaN and infinities as spelled.
    public static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
