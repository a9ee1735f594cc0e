import Clients
import Foundation
import Proto
import RPC
import ZMQ

extension LoadBenchmark {
    /// The burst after the soak: 16 connections to image-service with four 16 MiB PutImages
    /// each in flight (1 GiB asked for, against the process's 256 MiB of request bodies in
    /// flight), and one connection to item-service with 320 GetItems in flight (against a
    /// connection's 256 calls). Each refused call waits its `retry_after_ms` and is sent again.
    enum Overload {
        static func run(suite: Suite, context: Context, payloads: LoadPayloads, seconds: Int, recorder: LoadRecorder) async throws {
            let setup = try HomepwnerClients(context: context, endpoints: suite.endpoints, configuration: .init(connectWaitMilliseconds: 10_000))
            defer { setup.close() }
            var create = CreateItemRequest()
            create.name = "overload"
            guard let item = await LoadClient.call(setup.items, ItemServiceRPC.createItem, create, recorder: recorder) else {
                throw ThumbsBenchmark.Failure("the overload phase could not create its item")
            }
            let end = ContinuousClock.now + .seconds(seconds)
            var clients: [RPCClient] = []
            for _ in 0..<16 {
                clients.append(try RPCClient(context: context, endpoint: suite.endpoints.imageRPC, configuration: .init(connectWaitMilliseconds: 10_000)))
            }
            let flood = try RPCClient(context: context, endpoint: suite.endpoints.itemRPC, configuration: .init(connectWaitMilliseconds: 10_000))
            await withTaskGroup(of: Void.self) { group in
                for client in clients {
                    for _ in 0..<4 {
                        group.addTask {
                            while ContinuousClock.now < end {
                                var put = PutImageRequest()
                                put.ownerKey = item.key
                                put.data = payloads.large
                                guard let info = await LoadClient.call(client, ImageServiceRPC.putImage, put, recorder: recorder, timeout: LoadClient.largeTimeout) else { continue }
                                var delete = DeleteImageRequest()
                                delete.key = info.key
                                _ = await LoadClient.call(client, ImageServiceRPC.deleteImage, delete, recorder: recorder)
                            }
                        }
                    }
                }
                for _ in 0..<320 {
                    group.addTask {
                        var get = GetItemRequest()
                        get.key = item.key
                        while ContinuousClock.now < end {
                            _ = await LoadClient.call(flood, ItemServiceRPC.getItem, get, recorder: recorder)
                        }
                    }
                }
            }
            for client in clients { client.close() }
            flood.close()
            var delete = DeleteItemRequest()
            delete.key = item.key
            _ = await LoadClient.call(setup.items, ItemServiceRPC.deleteItem, delete, recorder: recorder)
        }
    }

    struct Report {
        let clients: Int
        let minutes: Double
        let soakSeconds: Double
        let recorder: LoadRecorder
        let overload: LoadRecorder
        let overloadSeconds: Int
        let soakSamples: [Sample]
        /// Samples after the soak, each with what it follows.
        let extraSamples: [(String, Sample)]
        var lastSample: Sample { extraSamples.last?.1 ?? soakSamples.last! }
        let crashed: [String]
        let dataBytes: Int

        /// Per process: the two windows compared (means of their samples), RSS and descriptors.
        struct Flatness {
            let name: String
            let residentEarly: Double, residentLate: Double
            let descriptorsEarly: Double, descriptorsLate: Double
            var residentRatio: Double { residentLate / max(1, residentEarly) }
            var descriptorsRatio: Double { descriptorsLate / max(1, descriptorsEarly) }
            var flat: Bool { residentRatio <= 1.1 && descriptorsRatio <= 1.1 }
        }

        /// The rule: with at least 3 minutes of samples, the last minute's against the second
        /// minute's (the first is warm-up); shorter, the last sample against the second.
        var rule: String {
            long
                ? "mean of the samples of the last minute of the soak (its last 6) ≤ 1.1 × mean of those of the second minute (60, 70, … 110 s)"
                : "run under 3 minutes, so no verdict on warm-up: the last sample ≤ 1.1 × the second sample (a verdict needs ≥ 3 min)"
        }

        var long: Bool { minutes >= 3 }

        var flatness: [Flatness] {
            let samples = soakSamples
            guard samples.count >= 2 else { return [] }
            let early: [Sample], late: [Sample]
            if long {
                let end = Int(minutes * 60)
                early = samples.filter { $0.seconds >= 60 && $0.seconds < 120 }
                late = samples.filter { $0.seconds >= end - 60 }
            } else {
                early = [samples[1]]
                late = [samples.last!]
            }
            func mean(_ window: [Sample], _ value: (Sample) -> Int) -> Double {
                Double(window.map(value).reduce(0, +)) / Double(max(1, window.count))
            }
            return LoadBenchmark.names.indices.map { index in
                Flatness(
                    name: LoadBenchmark.names[index],
                    residentEarly: mean(early) { $0.resident[index] }, residentLate: mean(late) { $0.resident[index] },
                    descriptorsEarly: mean(early) { $0.descriptors[index] }, descriptorsLate: mean(late) { $0.descriptors[index] })
            }
        }

        /// Codes an overload may be answered with: 8 (its retry_after_ms checked apart) and 14.
        var overloadOther: [String] {
            overload.rows().flatMap { row in
                row.codes.keys.filter { ![0, 8, 14].contains($0) }.map {
                    "\(row.method) \(LoadRecorder.codeName($0)) ×\(row.codes[$0]!): \(row.messages[$0]?.first ?? "")"
                }
            }
        }

        var failures: [String] {
            var failures = crashed
            let soak = recorder.state.withLock { $0 }, burst = overload.state.withLock { $0 }
            if !soak.hangs.isEmpty { failures.append("\(soak.hangs.count) hang(s) in the soak, e.g. \(soak.hangs[0])") }
            if !burst.hangs.isEmpty { failures.append("\(burst.hangs.count) hang(s) in the overload, e.g. \(burst.hangs[0])") }
            for missing in [soak.missingRetryAfter, burst.missingRetryAfter] where !missing.isEmpty {
                failures.append("\(missing.count) RESOURCE_EXHAUSTED without retry_after_ms, e.g. \(missing[0])")
            }
            for process in flatness where !process.flat {
                failures.append(String(
                    format: "%@ grew: RSS ×%.2f, descriptors ×%.2f (%@)", process.name, process.residentRatio, process.descriptorsRatio, rule))
            }
            return failures
        }

        static func statuses(_ codes: [Int32: Int]) -> String {
            codes.keys.sorted().map { "\(LoadRecorder.codeName($0)) \(codes[$0]!)" }.joined(separator: ", ")
        }

        func methodTable(_ recorder: LoadRecorder, seconds: Double) -> String {
            var lines = [
                "| method | calls | calls/s | p50 ms | p99 ms | max ms | statuses |",
                "|---|---|---|---|---|---|---|",
            ]
            let rows = recorder.rows()
            for row in rows {
                lines.append(String(
                    format: "| %@ | %d | %.1f | %.1f | %.1f | %.0f | %@ |", row.method, row.calls, Double(row.calls) / seconds,
                    row.p50, row.p99, row.max, Self.statuses(row.codes)))
            }
            let total = rows.reduce(0) { $0 + $1.calls }
            lines.append(String(format: "| **all** | %d | %.1f | | | | |", total, Double(total) / seconds))
            return lines.joined(separator: "\n")
        }

        func printMarkdown(failures: [String]) {
            let soak = recorder.state.withLock { $0 }
            print("""
                load: \(clients) clients for \(String(format: "%g", minutes)) min (\(Int(soakSeconds)) s measured), then \
                \(overloadSeconds) s of overload; the four executables of this build as processes on ipc sockets, \
                \(ProcessInfo.processInfo.activeProcessorCount) cores

                ### Calls (soak)

                \(methodTable(recorder, seconds: max(1, soakSeconds)))

                RESOURCE_EXHAUSTED answered with retry_after_ms and retried after it: \(soak.retryAfterHonoured); \
                hangs (no reply within timeout + 5 s): \(soak.hangs.count); captures finished DONE \(soak.capturesDone), \
                DEAD \(soak.capturesDead.count)\(soak.capturesDead.first.map { " (e.g. \($0))" } ?? ""); \
                data folder at the end: \(dataBytes / 1_000_000) MB

                """)
            let messages = recorder.rows().flatMap { row in
                row.messages.keys.sorted().map { "- \(row.method) \(LoadRecorder.codeName($0)): \(row.messages[$0]!.joined(separator: " | "))" }
            }
            if !messages.isEmpty { print("Non-OK answers, up to 3 messages each:\n\n" + messages.joined(separator: "\n") + "\n") }
            print("### RSS (MB) and open descriptors every \(LoadBenchmark.sampleSeconds) s\n")
            print("| s | calls/s | " + LoadBenchmark.names.map { "\($0) RSS / fds" }.joined(separator: " | ") + " | image cache MB |")
            print("|---|---|" + String(repeating: "---|", count: LoadBenchmark.names.count + 1))
            var previous: Sample?
            for (note, sample) in soakSamples.map({ ("", $0) }) + extraSamples {
                let rate = previous.map { Double(sample.calls - $0.calls) / Double(max(1, sample.seconds - $0.seconds)) } ?? 0
                let label = note.isEmpty ? "\(sample.seconds)" : "\(sample.seconds) (\(note))"
                print("| \(label) | \(String(format: "%.0f", rate)) | " + LoadBenchmark.names.indices.map {
                    String(format: "%.1f / %d", Double(sample.resident[$0]) / 1_048_576, sample.descriptors[$0])
                }.joined(separator: " | ") + String(format: " | %.1f |", Double(sample.cacheBytes) / 1_048_576))
                previous = sample
            }
            print(String(format: "\nimage-service's cache budget (CacheStats): %.0f MB (--cache-mb; 0 gives the service's default, ⅛ of the machine's memory up to 2 GiB)", Double(lastSample.cacheBudget) / 1_048_576))
            print("\n### Flat after warm-up? (\(rule))\n")
            print("| process | RSS MB early | RSS MB late | ×  | fds early | fds late | × | flat |")
            print("|---|---|---|---|---|---|---|---|")
            for process in flatness {
                print(String(
                    format: "| %@ | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %@ |", process.name, process.residentEarly / 1_048_576,
                    process.residentLate / 1_048_576, process.residentRatio, process.descriptorsEarly, process.descriptorsLate,
                    process.descriptorsRatio, process.flat ? "yes" : "**no**"))
            }
            if overloadSeconds > 0 {
                let burst = overload.state.withLock { $0 }
                print("""

                    ### Overload (\(overloadSeconds) s: 16 connections × four 16 MiB PutImages in flight to image-service, \
                    one connection with 320 GetItems in flight to item-service)

                    \(methodTable(overload, seconds: Double(overloadSeconds)))

                    Refusals retried after their retry_after_ms: \(burst.retryAfterHonoured); hangs: \(burst.hangs.count); \
                    answers other than OK, RESOURCE_EXHAUSTED and UNAVAILABLE: \(overloadOther.isEmpty ? "none" : overloadOther.joined(separator: "; "))
                    """)
                let messages = overload.rows().flatMap { row in
                    row.messages.keys.sorted().map { "- \(row.method) \(LoadRecorder.codeName($0)): \(row.messages[$0]!.joined(separator: " | "))" }
                }
                if !messages.isEmpty { print("\n" + messages.joined(separator: "\n")) }
            }
            print("\n**Verdict: \(failures.isEmpty ? "PASS" : "FAIL")**" + (failures.isEmpty ? "" : "\n\n" + failures.map { "- \($0)" }.joined(separator: "\n")))
        }

        func json(failures: [String]) -> String {
            func methods(_ recorder: LoadRecorder, _ seconds: Double) -> [[String: Any]] {
                recorder.rows().map { row in
                    [
                        "method": row.method, "calls": row.calls, "per_second": Double(row.calls) / seconds, "p50_ms": row.p50,
                        "p99_ms": row.p99, "max_ms": row.max,
                        "statuses": Dictionary(uniqueKeysWithValues: row.codes.map { (LoadRecorder.codeName($0.key), $0.value) }),
                        "messages": Dictionary(uniqueKeysWithValues: row.messages.map { (LoadRecorder.codeName($0.key), $0.value) }),
                    ]
                }
            }
            let soak = recorder.state.withLock { $0 }, burst = overload.state.withLock { $0 }
            let object: [String: Any] = [
                "clients": clients, "minutes": minutes, "soak_seconds": soakSeconds, "overload_seconds": overloadSeconds,
                "methods": methods(recorder, max(1, soakSeconds)), "overload_methods": methods(overload, Double(max(1, overloadSeconds))),
                "hangs": soak.hangs + burst.hangs, "missing_retry_after": soak.missingRetryAfter + burst.missingRetryAfter,
                "retry_after_honoured": soak.retryAfterHonoured, "overload_retry_after_honoured": burst.retryAfterHonoured,
                "overload_other_answers": overloadOther,
                "captures_done": soak.capturesDone, "captures_dead": soak.capturesDead, "data_bytes": dataBytes,
                "samples": (soakSamples.map { ("", $0) } + extraSamples).map { note, sample in
                    [
                        "note": note,
                        "seconds": sample.seconds, "calls": sample.calls,
                        "processes": LoadBenchmark.names.indices.map {
                            ["name": LoadBenchmark.names[$0], "rss_bytes": sample.resident[$0], "fds": sample.descriptors[$0]]
                        },
                        "image_cache_bytes": sample.cacheBytes, "image_cache_budget_bytes": sample.cacheBudget,
                    ] as [String: Any]
                },
                "rule": rule,
                "flatness": flatness.map {
                    [
                        "name": $0.name, "rss_early": $0.residentEarly, "rss_late": $0.residentLate, "fds_early": $0.descriptorsEarly,
                        "fds_late": $0.descriptorsLate, "flat": $0.flat,
                    ] as [String: Any]
                },
                "failures": failures, "pass": failures.isEmpty,
            ]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }
}
