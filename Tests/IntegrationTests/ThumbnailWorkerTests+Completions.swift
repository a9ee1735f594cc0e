import Foundation
import Harness
@testable import ImageService
import JPEG
import Proto
import RPC
import Runtime
import Synchronization
import Testing
import ThumbnailWorker
import TestSupport
import RPCTestSupport

/// Completions the image service refuses or stores nothing of: late, malformed, for a deleted or replaced image, or with its disk full.
extension ThumbnailWorkerTests {
    @Test func aLateWorkersCompletionStoresNothingAndLeavesNoFile() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        let original = try await Self.put(client, "Landscape_3.jpg")
        let late = try await Self.lease(client, worker: "late")
        // The first worker's lease ends (given back, as an expiry would), a second worker takes the job.
        var back = FailRequest()
        back.queue = "thumbnails"
        back.jobId = late.jobId
        back.leaseId = late.leaseId
        back.giveBack = true
        _ = try await client.call(JobQueueRPC.fail, back)
        let current = try await Self.lease(client, worker: "current")
        let sizes = [64, 256, 1024]
        try await Self.complete(client, current, try Self.result(of: "Landscape_3.jpg", sizes: sizes))
        let stored = try await Self.thumbnails(client, of: original.key)
        #expect(stored.count == 3)

        let refused = await rpcError { try await Self.complete(client, late, try Self.result(of: "Landscape_3.jpg", sizes: sizes)) }
        #expect(refused?.code == .failedPrecondition && refused?.message.contains("this worker's result was not stored") == true)
        #expect(try await Self.thumbnails(client, of: original.key) == stored)
        #expect(Self.blobFiles(harness) == Set([original.key] + stored.map(\.key)))
        // The repeat of the completion that was stored is answered again, storing nothing more.
        try await Self.complete(client, current, try Self.result(of: "Landscape_3.jpg", sizes: sizes))
        #expect(try await Self.thumbnails(client, of: original.key) == stored && Self.blobFiles(harness).count == 4)
        let job = try #require(try await Self.jobs(client, .done).first)
        #expect(job.attempts == 1 && job.errors.isEmpty)
    }

    @Test func aResultThatIsNotThumbnailsOfTheSizesAskedIsRefusedNamingWhatIsWrong() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        let original = try await Self.put(client, "Landscape_1.jpg")
        let job = try await Self.lease(client, worker: "w")

        var notJPEG = ThumbnailResult()
        var thumbnail = Thumbnail()
        thumbnail.size = 64
        thumbnail.data = Array("not a jpeg".utf8)
        notJPEG.thumbnails = [thumbnail]
        let garbage = await rpcError { try await Self.complete(client, job, notJPEG) }
        #expect(garbage?.code == .invalidArgument && garbage?.message.contains("size 64") == true, "\(String(describing: garbage))")

        let unasked = await rpcError { try await Self.complete(client, job, try Self.result(of: "Landscape_1.jpg", sizes: [100])) }
        #expect(unasked?.code == .invalidArgument && unasked?.message.contains("asked for sizes 64,256,1024") == true)

        // A 256-pixel thumbnail sent as the 64 one.
        var tooLarge = try Self.result(of: "Landscape_1.jpg", sizes: [256])
        tooLarge.thumbnails[0].size = 64
        let large = await rpcError { try await Self.complete(client, job, tooLarge) }
        #expect(large?.code == .invalidArgument && large?.message.contains("larger than its size") == true)

        var bytes = CompleteRequest()
        bytes.queue = "thumbnails"
        bytes.jobId = job.jobId
        bytes.leaseId = job.leaseId
        bytes.result = [0xFF, 0xFF, 0xFF]
        let undecodable = await rpcError { try await client.call(JobQueueRPC.complete, bytes) }
        #expect(undecodable?.code == .invalidArgument && undecodable?.message.contains("not a ThumbnailResult") == true)

        // Nothing was stored, no file left, and the job still runs under its lease.
        #expect(try await Self.thumbnails(client, of: original.key).isEmpty && Self.blobFiles(harness) == [original.key])
        #expect(try await Self.jobs(client, .running).map(\.jobId) == [job.jobId])
    }

    @Test func theThumbnailsOfAnImageDeletedWhileTheyWereMadeAreNotStored() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        let original = try await Self.put(client, "Portrait_1.jpg")
        let job = try await Self.lease(client, worker: "w")
        var delete = DeleteImageRequest()
        delete.key = original.key
        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        try await Self.complete(client, job, try Self.result(of: "Portrait_1.jpg", sizes: [64, 256, 1024]))
        let done = try #require(try await Self.jobs(client, .done).first)
        #expect(try ThumbnailResult(serializedBytes: done.result).thumbnails.isEmpty)
        #expect(try await Self.thumbnails(client, of: original.key).isEmpty && Self.blobFiles(harness).isEmpty)
    }

    @Test func aKeyDeletedAndStoredAgainWhileItsJobRunsGetsAJobOfItsOwnAndTheOldResultStoresNothing() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        let key = UUID().uuidString.lowercased()
        func put(_ name: String) async throws -> ImageInfo {
            var request = PutImageRequest()
            request.data = try Fixtures.orientationPhoto(name)
            request.ownerKey = "item-1"
            request.key = key
            return try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 30_000))
        }
        _ = try await put("Landscape_1.jpg")
        let old = try await Self.lease(client, worker: "slow")
        // While the worker makes the landscape's thumbnails, the key is deleted and a portrait
        // stored under it (a capture's retry puts the same keys).
        var delete = DeleteImageRequest()
        delete.key = key
        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        let portrait = try await put("Portrait_1.jpg")
        let pending = try await Self.jobs(client, .queued)
        #expect(pending.count == 1 && pending.first?.jobId != old.jobId, "the portrait has a job of its own: \(pending.map(\.dedupeKey))")

        try await Self.complete(client, old, try Self.result(of: "Landscape_1.jpg", sizes: [64, 256, 1024]))
        #expect(try await Self.thumbnails(client, of: key).isEmpty, "the landscape's thumbnails are not the portrait's")
        let superseded = try #require(try await Self.jobs(client, .done).first { $0.jobId == old.jobId })
        #expect(try ThumbnailResult(serializedBytes: superseded.result).thumbnails.isEmpty)

        try harness.start(.thumbnailWorker)
        try await Self.waitUntil { try await Self.thumbnails(client, of: key).count == 3 }
        let made = try await Self.thumbnails(client, of: key).sorted { $0.height < $1.height }
        #expect(made.map { "\($0.width)×\($0.height)" } == ["43×64", "171×256", "683×1024"], "of the portrait: \(portrait.width)×\(portrait.height)")
        #expect(Self.blobFiles(harness) == Set([key] + made.map(\.key)))
    }

    @Test func aResultRefusedForAFullDiskIsSentAgainWithItsJobHeldAndStoredOnceThereIsRoom() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        let original = try await Self.put(client, "Landscape_2.jpg")
        // From here on the image store's disk is full: a thumbnail's write fails with ENOSPC.
        let store = try #require(harness.composition(.imageService)?.first(ImageStore.self))
        let full = Atomic<Bool>(true)
        store.hooks.set { hooks in
            hooks.folderSync = { path in
                if full.load(ordering: .relaxed) { throw BlobIOError(operation: "fsync", path: path, code: ENOSPC) }
            }
        }
        try harness.start(.thumbnailWorker)
        // Two refusals: the worker sent its result again instead of failing the job.
        try await Self.waitUntil {
            let refused = try await Self.refusedCompletes(client), dead = try await Self.jobs(client, .dead)
            return refused >= 2 || !dead.isEmpty
        }
        #expect(try await Self.jobs(client, .dead).isEmpty, "a full disk sends no job to DEAD")
        let held = try await Self.jobs(client, .running)
        #expect(held.count == 1 && held.first?.attempts == 1 && held.first?.errors.isEmpty == true, "\(held)")
        // Nothing of the refused results is stored, no file either.
        #expect(try await Self.thumbnails(client, of: original.key).isEmpty && Self.blobFiles(harness) == [original.key])
        // The worker says so: in Health/Check's conditions (still SERVING) and in its figures.
        let worker = try harness.client(.thumbnailWorker)
        defer { worker.close() }
        let health = try await worker.call(HealthRPC.check, HealthCheckRequest())
        #expect(health.status == .serving && health.conditions.map(\.name) == ["disk_full"], "\(health.conditions)")
        let message = health.conditions.first?.message ?? ""
        #expect(message.contains("1 job of queue thumbnails wait for a service's full disk")
            && message.contains("the disk is full (the image store's disk") && health.conditions[0].sinceUnixMs > 0, "\(health.conditions)")
        let figures = try await worker.call(MetricsRPC.stats, ProcessStatsRequest()).figures
        #expect(figures.first { $0.name == "homepwner_worker_jobs_waiting_disk_full" }?.value == 1)
        let cli = try await CLITests.homepwner(
            ["health", "thumbnail-worker"], environment: ["HOMEPWNER_THUMBNAIL_WORKER_RPC": harness.endpoint(.thumbnailWorker)])
        #expect(cli.status == 0 && cli.stdout.contains("thumbnail-worker: disk_full: 1 job of queue thumbnails wait for a service's full disk"), "\(cli.stdout)")

        full.store(false, ordering: .relaxed)
        try await Self.waitUntil { try await Self.thumbnails(client, of: original.key).count == 3 }
        let done = try await Self.jobs(client, .done)
        #expect(done.count == 1 && done.first?.attempts == 1 && done.first?.errors.isEmpty == true, "\(done)")
        // The condition clears once the worker has the service's answer to the Complete that
        // went through, which can come a moment after the service stored it (the job is DONE
        // first): it failed once in a whole run under load when asked at once.
        try await Self.waitUntil { try await worker.call(HealthRPC.check, HealthCheckRequest()).conditions.isEmpty }
    }

    /// How many Complete calls the image service answered RESOURCE_EXHAUSTED.
    static func refusedCompletes(_ client: RPCClient) async throws -> UInt64 {
        let stats = try await client.call(MetricsRPC.stats, ProcessStatsRequest())
        let complete = stats.methods.first { $0.method == JobQueueRPC.complete.path }
        return complete?.codes.first { $0.code == .resourceExhausted }?.count ?? 0
    }
}
