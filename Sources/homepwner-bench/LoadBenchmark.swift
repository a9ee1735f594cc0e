import Clients
import Foundation
import Proto
import RPC
import Runtime
import Locking
import ZMQ

/// `homepwner-bench load`: a soak. The four executables of this build as processes (ipc sockets
/// and a data folder in a temporary folder), `--clients` clients (each its own two connections)
/// making a weighted mix of item, image (16 MiB bodies among them, in one PutImage or a chunked
/// upload), rendition, capture, thumbnail-batch and Health calls for `--minutes`, then an
/// overload burst. Every call has a client-side deadline: its timeout and 5 s more; no reply
/// by then is a hang. Every 10 s each process's RSS and open descriptors are sampled.
///
/// image-service runs with a cache budget of `--cache-mb` (256 by default; 0: the service's own
/// default, ⅛ of the machine's memory up to 2 GiB). A cache filling toward its budget is growth
/// by design (bounded, and handed back under memory pressure: ImageCacheTests); with the default
/// budget it would still be filling at the end of the soak and hide or pass for any other growth,
/// so the soak uses a budget the workload fills within its first minute.
///
/// The verdict fails (exit 1) on a hang, a RESOURCE_EXHAUSTED without `retry_after_ms`, a
/// process that ended, an overload answered otherwise than 8 with `retry_after_ms` or 14, or a
/// process whose RSS or descriptors grew: the mean of the last minute's samples over 1.1 × the
/// mean of the second minute's (runs under 3 minutes: the last sample over 1.1 × the second).
enum LoadBenchmark {
    struct Sample {
        let seconds: Int
        let calls: Int
        /// Per process, in `names` order.
        let resident: [Int]
        let descriptors: [Int]
        /// image-service's cache (CacheStats), bytes and budget.
        let cacheBytes: Int, cacheBudget: Int
    }

    static let names = ["item-service", "image-service", "capture-worker", "thumbnail-worker"]
    static let sampleSeconds = 10

    static func run(_ arguments: [String]) async {
        func option(_ name: String, _ fallback: String) -> String {
            arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil } ?? fallback
        }
        let minutes = max(0.05, Double(option("--minutes", "10")) ?? 10)
        let clientCount = max(1, Int(option("--clients", "64")) ?? 64)
        let overloadSeconds = max(0, Int(option("--overload-seconds", "30")) ?? 30)
        let cacheMebibytes = max(0, Int(option("--cache-mb", "256")) ?? 256)
        let json = arguments.contains("--json")
        do {
            let payloads = try LoadPayloads.load(repository: FileManager.default.currentDirectoryPath)
            let context = try Context()
            let suite = try await Suite(context: context, libraryPhoto: payloads.photos[0], cacheBytes: cacheMebibytes << 20)
            var failures: [String] = []
            let report: Report
            do {
                report = try await soak(
                    suite: suite, context: context, payloads: payloads, minutes: minutes, clientCount: clientCount,
                    overloadSeconds: overloadSeconds)
            } catch {
                suite.close()
                throw error
            }
            let ended = suite.close()
            failures += report.failures + ended
            if json {
                print(report.json(failures: failures))
            } else {
                report.printMarkdown(failures: failures)
            }
            if !failures.isEmpty { exit(1) }
        } catch {
            FileHandle.standardError.write(Data("load benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func soak(
        suite: Suite, context: Context, payloads: LoadPayloads, minutes: Double, clientCount: Int, overloadSeconds: Int
    ) async throws -> Report {
        let recorder = LoadRecorder()
        let started = ContinuousClock.now
        let end = started + .milliseconds(Int(minutes * 60_000))
        let sampler = try Sampler(suite: suite, recorder: recorder, started: started, context: context)
        defer { sampler.images.close() }
        await sampler.sample()
        let sampling = Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(sampleSeconds))
                if !Task.isCancelled { await sampler.sample() }
            }
        }
        // The soak.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<clientCount {
                var client = try LoadClient(index: index, of: clientCount, context: context, endpoints: suite.endpoints, recorder: recorder, payloads: payloads)
                group.addTask {
                    await client.run(until: end)
                    await client.clean()
                    client.clients.close()
                }
            }
            try await group.waitForAll()
        }
        let soakSeconds = Double((ContinuousClock.now - started).components.seconds)
        sampling.cancel()
        // The samples the verdict reads: those taken while the clients ran.
        let soakSamples = sampler.samples.withLock { $0 }.filter { $0.seconds < Int(minutes * 60) }
        var extra: [(String, Sample)] = []
        await sampler.sample()
        extra.append(("end of soak, clients' items deleted", sampler.samples.withLock { $0.last! }))
        // What of image-service's RSS is live: its cache emptied, then malloc_trim (ImageCache.purge).
        var purge = PurgeCacheRequest()
        purge.level = .critical
        _ = try? await sampler.images.call(ImageServiceRPC.purgeCache, purge, options: .init(timeoutMilliseconds: 10_000))
        try? await Task.sleep(for: .seconds(1))
        await sampler.sample()
        extra.append(("after PurgeCache CRITICAL (image-service: cache emptied, malloc_trim)", sampler.samples.withLock { $0.last! }))
        // The burst.
        let overload = LoadRecorder()
        if overloadSeconds > 0 {
            try await Overload.run(suite: suite, context: context, payloads: payloads, seconds: overloadSeconds, recorder: overload)
            await sampler.sample()
            extra.append(("after overload", sampler.samples.withLock { $0.last! }))
        }
        return Report(
            clients: clientCount, minutes: minutes, soakSeconds: soakSeconds, recorder: recorder, overload: overload,
            overloadSeconds: overloadSeconds, soakSamples: soakSamples, extraSamples: extra,
            crashed: sampler.crashed.withLock { $0 }, dataBytes: Suite.bytes(under: suite.folder + "/data"))
    }

    /// Every 10 s: the RSS and descriptors of each process, and whether it still runs.
    final class Sampler: Sendable {
        let suite: Suite
        let recorder: LoadRecorder
        let started: ContinuousClock.Instant
        let samples = Locked<[Sample]>([])
        let crashed = Locked<[String]>([])
        let images: RPCClient

        init(suite: Suite, recorder: LoadRecorder, started: ContinuousClock.Instant, context: Context) throws {
            images = try RPCClient(context: context, endpoint: suite.endpoints.imageRPC, configuration: .init(connectWaitMilliseconds: 10_000))
            self.suite = suite
            self.recorder = recorder
            self.started = started
        }

        func sample() async {
            let cache = try? await images.call(ImageServiceRPC.cacheStats, CacheStatsRequest(), options: .init(timeoutMilliseconds: 5_000))
            let seconds = Int((ContinuousClock.now - started).components.seconds)
            let pids = suite.processes.map(\.processIdentifier)
            for (name, process) in zip(names, suite.processes) where !process.isRunning {
                let why = "\(name) ended during the run (\(process.terminationReason == .uncaughtSignal ? "signal" : "exit") \(process.terminationStatus))"
                crashed.withLock { if !$0.contains(where: { $0.hasPrefix(name + " ") }) { $0.append(why) } }
            }
            let value = Sample(
                seconds: seconds, calls: recorder.completed.load(ordering: .relaxed),
                resident: pids.map { Int(ProcessMemory.of(pid: $0).residentBytes) },
                descriptors: pids.map { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\($0)/fd").count) ?? 0 },
                cacheBytes: Int(cache?.bytes ?? -1), cacheBudget: Int(cache?.budgetBytes ?? -1))
            samples.withLock { $0.append(value) }
        }
    }

    /// The four processes, on ipc sockets in a temporary folder. Its processes are set up
    /// before the run and only read during it (the sampler), stopped after it.
    final class Suite: @unchecked Sendable {
        let folder: String
        let endpoints: ServiceEndpoints
        var processes: [Process] = []
        let log: FileHandle

        init(context: Context, libraryPhoto: [UInt8], cacheBytes: Int) async throws {
            folder = NSTemporaryDirectory() + "hp-bench-load-\(UUID().uuidString.prefix(8))"
            let library = folder + "/library", data = folder + "/data"
            try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
            try Data(libraryPhoto).write(to: URL(fileURLWithPath: library + "/photo.jpg"))
            _ = FileManager.default.createFile(atPath: folder + "/services.log", contents: nil)
            log = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/services.log"))
            endpoints = ServiceEndpoints.ipc(in: folder)
            let common = ["--log-level", "warning"]
            processes.append(try await ThumbsBenchmark.Suite.launchAnswering("item-service", [
                "--rpc", endpoints.itemRPC, "--events", endpoints.itemEvents, "--data-dir", data,
                "--image-service", endpoints.imageRPC, "--library", library,
            ] + common, health: endpoints.itemRPC, context: context, standardError: log))
            processes.append(try await ThumbsBenchmark.Suite.launchAnswering("image-service", [
                "--rpc", endpoints.imageRPC, "--events", endpoints.imageEvents, "--data-dir", data,
                "--cache-bytes", String(cacheBytes),
            ] + common, health: endpoints.imageRPC, context: context, standardError: log))
            processes.append(try await ThumbsBenchmark.Suite.launchAnswering("capture-worker", [
                "--rpc", endpoints.captureWorkerHealth, "--item-service", endpoints.itemRPC, "--image-service", endpoints.imageRPC,
                "--library", library,
            ] + common, health: endpoints.captureWorkerHealth, context: context, standardError: log))
            processes.append(try await ThumbsBenchmark.Suite.launchAnswering("thumbnail-worker", [
                "--rpc", endpoints.thumbnailWorkerHealth, "--image-service", endpoints.imageRPC,
            ] + common, health: endpoints.thumbnailWorkerHealth, context: context, standardError: log))
        }

        static func bytes(under path: String) -> Int {
            guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
            var total = 0
            while let name = walker.nextObject() as? String {
                total += ((try? FileManager.default.attributesOfItem(atPath: path + "/" + name))?[.size] as? Int) ?? 0
            }
            return total
        }

        /// Stops the processes (SIGTERM, workers first), removes the folder (unless
        /// HOMEPWNER_BENCH_KEEP is set); what went wrong: a process that had ended already, or
        /// that ended otherwise than exit 0.
        @discardableResult
        func close() -> [String] {
            var failures: [String] = []
            for (name, process) in zip(LoadBenchmark.names, processes).reversed() {
                if !process.isRunning {
                    failures.append("\(name) had ended before the end of the run (status \(process.terminationStatus))")
                    continue
                }
                process.terminate()
                process.waitUntilExit()
                if process.terminationReason != .exit || process.terminationStatus != 0 {
                    failures.append("\(name) stopped with \(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus) on SIGTERM")
                }
            }
            processes.removeAll()
            try? log.close()
            if ProcessInfo.processInfo.environment["HOMEPWNER_BENCH_KEEP"] == nil {
                try? FileManager.default.removeItem(atPath: folder)
            } else {
                FileHandle.standardError.write(Data("kept \(folder)\n".utf8))
            }
            return failures
        }
    }
}
