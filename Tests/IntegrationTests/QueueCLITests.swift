import Foundation
import Harness
import Proto
import RPC
import Testing

/// `homepwner queue …` through the real executable against image-service's `thumbnails` queue,
/// whose jobs the tests make by putting JPEGs and move by leasing and failing them over RPC.
@Suite struct QueueCLITests {
    /// Stores each photo on image-service (each enqueues its thumbnails job); the images' keys.
    static func putPhotos(_ names: [String], client: RPCClient) async throws -> [String] {
        var keys: [String] = []
        for name in names {
            keys.append(try await ImageServiceRPCTests.put(client, try ImageServiceRPCTests.photo(name)).key)
        }
        return keys
    }

    static func lease(_ client: RPCClient, max: Int32 = 1) async throws -> [Job] {
        var request = LeaseRequest()
        request.queue = "thumbnails"
        request.workerId = "worker-cli-test"
        request.maxJobs = max
        return try await client.call(JobQueueRPC.lease, request).jobs
    }

    static func failPermanently(_ job: Job, _ message: String, client: RPCClient) async throws {
        var request = FailRequest()
        request.queue = job.queue
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.error = message
        request.permanent = true
        #expect(try await client.call(JobQueueRPC.fail, request).state == .dead)
    }

    static func object(_ json: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
    }

    /// `queue stats --json`, parsed.
    static func stats(_ harness: Harness) async throws -> [String: Any] {
        let run = try await CLITests.homepwner(["queue", "stats", "--json"], harness: harness)
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(object(run.stdout), "\(run.stdout)")
    }

    @Test func statsCountThePutPhotosAndPauseStopsLeasesUntilResume() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        _ = try await Self.putPhotos(["Landscape_1.jpg", "Landscape_2.jpg", "Portrait_3.jpg"], client: client)

        let stats = try await Self.stats(harness)
        // proto3 JSON with the .proto names: int64 as strings, every field present.
        #expect(stats["ready"] as? String == "3" && stats["leased"] as? String == "0" && stats["dead"] as? String == "0")
        #expect(stats["paused"] as? Bool == false && stats["done_retention_ms"] as? String == "86400000")
        #expect(stats["scheduled"] as? String == "0" && stats["oldest_ready_age_ms"] != nil)
        let table = try await CLITests.homepwner(["queue", "stats"], harness: harness)
        #expect(table.status == 0 && table.stdout.contains("ready           3") && table.stdout.contains("paused          no"), "\(table.stdout)")

        let pause = try await CLITests.homepwner(["queue", "pause"], harness: harness)
        #expect(pause.status == 0 && pause.stdout.contains("queue thumbnails paused"), "\(pause.stderr)")
        #expect(try await Self.lease(client).isEmpty)
        #expect(try await Self.stats(harness)["paused"] as? Bool == true)
        let resume = try await CLITests.homepwner(["queue", "resume", "thumbnails", "--json"], harness: harness)
        #expect(resume.status == 0 && Self.object(resume.stdout)?["paused"] as? Bool == false, "\(resume.stdout)")
        #expect(try await Self.lease(client).count == 1)
        let after = try await Self.stats(harness)
        #expect(after["paused"] as? Bool == false && after["ready"] as? String == "2" && after["leased"] as? String == "1")

        // Each job on a line with its state and dedupe key; --state running only the leased one.
        let list = try await CLITests.homepwner(["queue", "ls"], harness: harness)
        #expect(list.status == 0 && list.stdout.components(separatedBy: "image:").count == 4, "\(list.stdout)")
        #expect(list.stdout.contains("RUNNING") && list.stdout.contains("QUEUED"))
        let running = try await CLITests.homepwner(["queue", "ls", "--state", "running", "--json"], harness: harness)
        let jobs = try #require(try JSONSerialization.jsonObject(with: Data(running.stdout.utf8)) as? [[String: Any]], "\(running.stdout)")
        #expect(jobs.count == 1 && jobs[0]["state"] as? String == "RUNNING" && jobs[0]["worker_id"] as? String == "worker-cli-test")
        #expect((jobs[0]["dedupe_key"] as? String)?.hasSuffix(":64,256,1024") == true && jobs[0]["max_attempts"] as? Int == 5)
        let limited = try await CLITests.homepwner(["queue", "ls", "--state", "queued", "--limit", "1", "--json"], harness: harness)
        #expect((try JSONSerialization.jsonObject(with: Data(limited.stdout.utf8)) as? [Any])?.count == 1)
    }

    @Test func aJobFailedPermanentlyIsListedDeadWithItsErrorThenRetriedOrPurged() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        let keys = try await Self.putPhotos(["Landscape_5.jpg"], client: client)
        let job = try #require(try await Self.lease(client).first)
        try await Self.failPermanently(job, "poison image: 40000×40000 pixels is over the limit", client: client)

        let dead = try await CLITests.homepwner(["queue", "dead"], harness: harness)
        #expect(dead.status == 0, "\(dead.stderr)")
        #expect(dead.stdout.contains("attempt 1") && dead.stdout.contains("worker-cli-test"), "\(dead.stdout)")
        #expect(dead.stdout.contains("poison image: 40000×40000 pixels is over the limit"))
        let deadJSON = try await CLITests.homepwner(["queue", "dead", "thumbnails", "--json"], harness: harness)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(deadJSON.stdout.utf8)) as? [[String: Any]])
        let errors = try #require(listed.first?["errors"] as? [[String: Any]])
        #expect(listed.count == 1 && errors.count == 1 && errors[0]["worker_id"] as? String == "worker-cli-test")

        // show decodes the payload, a ThumbnailJob of the photo at the service's sizes.
        let show = try await CLITests.homepwner(["queue", "show", job.jobId], harness: harness)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("ThumbnailJob: image \(keys[0]), sizes 64, 256, 1024"), "\(show.stdout)")
        #expect(show.stdout.contains("DEAD") && show.stdout.contains("1/5") && show.stdout.contains("poison image"))
        let showJSON = try await CLITests.homepwner(["queue", "show", "thumbnails", job.jobId, "--json"], harness: harness)
        let shown = try #require(Self.object(showJSON.stdout), "\(showJSON.stdout)")
        #expect(shown["job_id"] as? String == job.jobId && shown["last_error"] as? String == "poison image: 40000×40000 pixels is over the limit")
        let missing = try await CLITests.homepwner(["queue", "show", "999"], harness: harness)
        #expect(missing.status == 4 && missing.stderr.contains("queue thumbnails has no job 999"), "\(missing.stderr)")

        // Purging dead jobs takes --yes: their history is what an operator debugs with.
        let unconfirmed = try await CLITests.homepwner(["queue", "purge", "--state", "dead"], harness: harness)
        #expect(unconfirmed.status == 2 && unconfirmed.stderr.contains("1 dead job") && unconfirmed.stderr.contains("--yes"), "\(unconfirmed.stderr)")
        #expect(try await Self.stats(harness)["dead"] as? String == "1")
        let running = try await CLITests.homepwner(["queue", "purge", "--state", "running", "--yes"], harness: harness)
        #expect(running.status == 2 && running.stderr.contains("never purged"))

        let retry = try await CLITests.homepwner(["queue", "retry", job.jobId], harness: harness)
        #expect(retry.status == 0 && retry.stdout.contains("requeued 1 of the 1 job given"), "\(retry.stdout) \(retry.stderr)")
        var stats = try await Self.stats(harness)
        #expect(stats["ready"] as? String == "1" && stats["dead"] as? String == "0")
        // Not dead any more: a second retry of it requeues nothing, and says so.
        let again = try await CLITests.homepwner(["queue", "retry", "thumbnails", job.jobId, "--json"], harness: harness)
        #expect(again.status == 0 && Self.object(again.stdout)?["requeued"] as? String == "0", "\(again.stdout)")

        let relapse = try #require(try await Self.lease(client).first)
        try await Self.failPermanently(relapse, "poison again", client: client)
        let young = try await CLITests.homepwner(["queue", "purge", "--state", "dead", "--older-than", "1h", "--yes"], harness: harness)
        #expect(young.status == 0 && young.stdout.contains("purged 0 dead jobs"), "\(young.stdout) \(young.stderr)")
        let purge = try await CLITests.homepwner(["queue", "purge", "--state", "dead", "--yes", "--json"], harness: harness)
        #expect(purge.status == 0 && Self.object(purge.stdout)?["purged"] as? String == "1", "\(purge.stdout) \(purge.stderr)")
        stats = try await Self.stats(harness)
        #expect(stats["dead"] as? String == "0" && stats["ready"] as? String == "0")
        let gone = try await CLITests.homepwner(["queue", "show", job.jobId], harness: harness)
        #expect(gone.status == 4)
    }

    @Test func retryWithoutIdsRequeuesEveryDeadJob() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        _ = try await Self.putPhotos(["Landscape_6.jpg", "Landscape_7.jpg"], client: client)
        for job in try await Self.lease(client, max: 2) { try await Self.failPermanently(job, "broken", client: client) }
        #expect(try await Self.stats(harness)["dead"] as? String == "2")
        let retry = try await CLITests.homepwner(["queue", "retry", "thumbnails"], harness: harness)
        #expect(retry.status == 0 && retry.stdout.contains("requeued 2 jobs of thumbnails"), "\(retry.stdout) \(retry.stderr)")
        let stats = try await Self.stats(harness)
        #expect(stats["ready"] as? String == "2" && stats["dead"] as? String == "0")
    }

    @Test func anUnknownQueueOrBatchIsRefusedWithTheServicesMessage() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let unknown = try await CLITests.homepwner(["queue", "stats", "bogus"], harness: harness)
        #expect(unknown.status == 4, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("queue \"bogus\" is not served here; this endpoint serves: thumbnails"))
        let json = try await CLITests.homepwner(["queue", "dead", "--queue", "bogus", "--json"], harness: harness)
        let error = try #require(Self.object(json.stdout), "\(json.stdout)")
        #expect(json.status == 4 && error["status"] as? String == "NOT_FOUND" && (error["message"] as? String)?.contains("\"bogus\"") == true)
        let batch = try await CLITests.homepwner(["queue", "batch", "thumbnails", "41", "--watch"], harness: harness)
        #expect(batch.status == 4 && batch.stderr.contains("queue thumbnails has no batch 41"), "\(batch.stderr)")
        let twice = try await CLITests.homepwner(["queue", "stats", "thumbnails", "--queue", "capture"], harness: harness)
        #expect(twice.status == 2 && twice.stderr.contains("the queue is given twice"))
        let badState = try await CLITests.homepwner(["queue", "ls", "--state", "sleeping"], harness: harness)
        #expect(badState.status == 2 && badState.stderr.contains("--state sleeping"))
        let badLimit = try await CLITests.homepwner(["queue", "dead", "--limit", "0"], harness: harness)
        #expect(badLimit.status == 2 && badLimit.stderr.contains("homepwner queue dead: invalid value '0' for option '--limit'"), "\(badLimit.stderr)")
        let badAge = try await CLITests.homepwner(["queue", "purge", "--state", "done", "--older-than", "2 weeks"], harness: harness)
        #expect(badAge.status == 2 && badAge.stderr.contains("--older-than 2 weeks"))
    }

    @Test func everySubcommandHasHelp() async throws {
        let overview = try await CLITests.homepwner(["queue", "--help"])
        #expect(overview.status == 0 && overview.stdout.contains("7 a watched batch finished with dead jobs"))
        for subcommand in ["stats", "ls", "dead", "show", "retry", "pause", "resume", "purge", "batch"] {
            let help = try await CLITests.homepwner(["queue", subcommand, "--help"])
            #expect(help.status == 0 && help.stdout.contains("USAGE: homepwner queue \(subcommand)"), "\(subcommand): \(help.stdout)")
        }
        let top = try await CLITests.homepwner(["--help"])
        #expect(top.stdout.contains("queue"))
        let typo = try await CLITests.homepwner(["queue", "stast"])
        #expect(typo.status == 2 && typo.stderr.contains("did you mean 'stats'?"))
    }
}
