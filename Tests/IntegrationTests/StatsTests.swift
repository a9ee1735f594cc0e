import Foundation
import Harness
import Proto
import RPC
import Testing
import TestSupport

/// Metrics/Stats of every part of the suite: the figures follow the work (thumbnail jobs
/// queued, then done by the worker; a cascade owed while image-service is down), and
/// `homepwner stats` shows them.
@Suite struct StatsTests {
    static func stats(_ harness: Harness, _ part: Harness.Part) async throws -> ProcessStatsResponse {
        let client = try harness.client(part)
        defer { client.close() }
        return try await client.call(MetricsRPC.stats, ProcessStatsRequest(), options: patient)
    }

    /// The value of figure `name` (with label queue=`queue` when given); nil when absent.
    static func figure(_ stats: ProcessStatsResponse, _ name: String, queue: String? = nil) -> Double? {
        stats.figures.first { figure in
            figure.name == name && (queue == nil || figure.labels.contains { $0.name == "queue" && $0.value == queue })
        }?.value
    }

    static func waitFor(
        _ harness: Harness, _ part: Harness.Part, seconds: Int = 60, _ done: (ProcessStatsResponse) -> Bool
    ) async throws -> ProcessStatsResponse {
        let end = ContinuousClock.now + .seconds(seconds)
        var stats = try await Self.stats(harness, part)
        while !done(stats) && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
            stats = try await Self.stats(harness, part)
        }
        return stats
    }

    @Test func theFiguresOfEachPartFollowItsWork() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let item = try await clients.items.call(ItemServiceRPC.createItem, ItemCascadeTests.createRequest("Metered Lamp"))
        for seed in 0..<2 {
            let info = try await CascadeOrderTests.put(clients.images, owner: item.key, seed: seed)
            var attach = AttachPhotoRequest()
            attach.itemKey = item.key
            attach.imageKey = info.key
            _ = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
        }

        // No thumbnail worker yet: the originals' thumbnail jobs (one per image, all its sizes)
        // wait, and the oldest one ages.
        try await Task.sleep(for: .milliseconds(20))
        let waiting = try await Self.stats(harness, .imageService)
        #expect(Self.figure(waiting, "homepwner_queue_ready", queue: "thumbnails") == 2)
        #expect((Self.figure(waiting, "homepwner_queue_oldest_ready_age_seconds", queue: "thumbnails") ?? 0) > 0)
        #expect(Self.figure(waiting, "homepwner_cache_budget_bytes").map { $0 > 0 } == true)
        let puts = waiting.methods.first { $0.method == ImageServiceRPC.putImage.path }
        #expect(puts?.calls == 2 && puts?.codes.map(\.code) == [.ok])

        // The thumbnail worker takes them: its completions counted, the queue emptied.
        try harness.start(.thumbnailWorker)
        let worker = try await Self.waitFor(harness, .thumbnailWorker) {
            Self.figure($0, "homepwner_worker_jobs_completed_total", queue: "thumbnails") == 2
        }
        #expect(Self.figure(worker, "homepwner_worker_jobs_completed_total", queue: "thumbnails") == 2)
        #expect(Self.figure(worker, "homepwner_worker_jobs_failed_total", queue: "thumbnails") == 0)
        let drained = try await Self.waitFor(harness, .imageService) {
            Self.figure($0, "homepwner_queue_done", queue: "thumbnails") == 2
        }
        #expect(Self.figure(drained, "homepwner_queue_ready", queue: "thumbnails") == 0)
        #expect(Self.figure(drained, "homepwner_queue_done", queue: "thumbnails") == 2)

        // Deleted while image-service is down: the cascade is owed, then paid once it is back.
        await offThePool { harness.stop(.imageService) }
        var delete = DeleteItemRequest()
        delete.key = item.key
        _ = try await clients.items.call(ItemServiceRPC.deleteItem, delete)
        let owed = try await Self.stats(harness, .itemService)
        #expect(Self.figure(owed, "homepwner_pending_cascades") == 1)
        let deletes = owed.methods.first { $0.method == ItemServiceRPC.deleteItem.path }
        #expect(deletes?.calls == 1)
        try harness.start(.imageService)
        // The pending count comes from the writer and the queue's figures from a read
        // connection: one answer may hold the first after the commit and the second before it.
        let paid = try await Self.waitFor(harness, .itemService) {
            Self.figure($0, "homepwner_pending_cascades") == 0 && Self.figure($0, "homepwner_queue_done", queue: "cascade") == 1
        }
        #expect(Self.figure(paid, "homepwner_pending_cascades") == 0)
        #expect(Self.figure(paid, "homepwner_queue_done", queue: "cascade") == 1)
    }

    @Test func theCLIShowsEveryProcessAsATableJSONOrPrometheusText() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start()
        let clients = try harness.clients()
        defer { clients.close() }
        _ = try await clients.items.call(ItemServiceRPC.createItem, ItemCascadeTests.createRequest("Counted Chair"))
        let endpoints = [
            "--capture-worker", harness.endpoint(.captureWorker), "--thumbnail-worker", harness.endpoint(.thumbnailWorker),
        ]

        let table = try await CLITests.homepwner(["stats"], harness: harness)
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("item-service ") && table.stdout.contains("image-service "))
        #expect(table.stdout.contains("/homepwner.v1.ItemService/CreateItem"))
        #expect(table.stdout.contains("homepwner_pending_cascades"))

        let json = try await CLITests.homepwner(["stats", "all", "--json"] + endpoints, harness: harness)
        #expect(json.status == 0, "\(json.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        let processes = (parsed ?? []).compactMap { ($0["stats"] as? [String: Any])?["process"] as? String }
        #expect(processes == ["item-service", "image-service", "capture-worker", "thumbnail-worker"])
        let itemMethods = ((parsed?.first?["stats"] as? [String: Any])?["methods"] as? [[String: Any]]) ?? []
        let created = itemMethods.first { $0["method"] as? String == ItemServiceRPC.createItem.path }
        #expect("\(created?["calls"] ?? "")" == "1")

        let text = try await CLITests.homepwner(["stats", "thumbnail-worker", "--prometheus"] + endpoints, harness: harness)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("# TYPE homepwner_worker_jobs_completed_total counter\n"))
        #expect(text.stdout.contains("homepwner_process_info{process=\"thumbnail-worker\""))

        // A process that does not answer: named, and the exit code says unavailable.
        await offThePool { harness.stop(.captureWorker) }
        let partial = try await CLITests.homepwner(["stats", "all", "--timeout", "1500"] + endpoints, harness: harness)
        #expect(partial.status == 5, "\(partial.stdout)\(partial.stderr)")
        #expect(partial.stdout.contains("capture-worker at \(harness.endpoint(.captureWorker)): "))
        #expect(partial.stdout.contains("thumbnail-worker "))

        // --watch asks again every interval, one JSON document per line, until stopped.
        let watch = Process()
        watch.executableURL = ExecutableTests.binDirectory.appendingPathComponent("homepwner")
        watch.arguments = ["stats", "item", "--watch", "--interval", "0.2", "--json"]
        var environment = ProcessInfo.processInfo.environment
        environment["HOMEPWNER_ITEM_RPC"] = harness.endpoints.itemRPC
        watch.environment = environment
        let out = Pipe()
        watch.standardOutput = out
        try watch.run()
        // Stopped once it has printed three documents (or after 60 s, which fails below).
        let collected = Shared(Data())
        let reading = Task { await CLITests.readOnThread(out.fileHandleForReading, into: collected) }
        _ = try await eventually(within: 60) { collected.value.count(where: { $0 == UInt8(ascii: "\n") }) >= 3 }
        watch.terminate()
        let watched = await reading.value
        while watch.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        let lines = String(decoding: watched, as: UTF8.self).split(separator: "\n")
        #expect(lines.count >= 3, "\(lines)")
        #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [[String: Any]] })

        let bad = try await CLITests.homepwner(["stats", "nope"], harness: harness)
        #expect(bad.status == 2 && bad.stderr.contains("one of item, image, capture-worker, thumbnail-worker, all"))
        let badInterval = try await CLITests.homepwner(["stats", "--watch", "--interval", "0"], harness: harness)
        #expect(badInterval.status == 2 && badInterval.stderr.contains("--interval"))
    }
}
