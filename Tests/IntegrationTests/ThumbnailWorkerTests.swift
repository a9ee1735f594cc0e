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

/// The `thumbnails` queue end to end: a stored JPEG's job, the thumbnail worker making it, the
/// image service storing what it made in the transaction that completes the job.
@Suite struct ThumbnailWorkerTests {
    static func put(_ client: RPCClient, _ name: String, owner: String = "item-1") async throws -> ImageInfo {
        var request = PutImageRequest()
        request.data = try Fixtures.orientationPhoto(name)
        request.ownerKey = owner
        return try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 30_000))
    }

    static func thumbnails(_ client: RPCClient, of parent: String) async throws -> [ImageInfo] {
        var request = ListImagesRequest()
        request.kind = .thumbnail
        request.pageSize = 1000
        return try await client.call(ImageServiceRPC.listImages, request).images.filter { $0.parentKey == parent }
    }

    /// A harness running image-service (and the thumbnail worker), and a client of it.
    static func imageService(withWorker: Bool = false) throws -> (Harness, RPCClient) {
        let harness = try Harness()
        do {
            try harness.start(.imageService)
            if withWorker { try harness.start(.thumbnailWorker) }
            return (harness, try harness.client(.imageService))
        } catch {
            harness.shutdown()
            throw error
        }
    }

    /// Waits (60 s at most) until `done` holds.
    static func waitUntil(_ done: () async throws -> Bool) async throws {
        let end = monotonicMilliseconds() + 60_000
        while try await !done() {
            guard monotonicMilliseconds() < end else { Issue.record("gave up waiting"); return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    static func jobs(_ client: RPCClient, _ state: JobState = .unspecified) async throws -> [Job] {
        var request = ListJobsRequest()
        request.queue = "thumbnails"
        request.state = state
        request.pageSize = 1000
        return try await client.call(JobQueueRPC.listJobs, request).jobs
    }

    static func lease(_ client: RPCClient, worker: String) async throws -> Job {
        var request = LeaseRequest()
        request.queue = "thumbnails"
        request.workerId = worker
        request.waitMs = 5000
        // Ten minutes: no heartbeat keeps a test's lease, and a loaded machine has run a test
        // past the default 30 s, whose sweep then took the job back.
        request.leaseMs = 600_000
        return try #require(try await client.call(JobQueueRPC.lease, request, options: .init(timeoutMilliseconds: 10_000)).jobs.first)
    }

    /// The result a worker would send: the Thumbnailer's output for `sizes`.
    static func result(of name: String, sizes: [Int]) throws -> ThumbnailResult {
        var result = ThumbnailResult()
        result.thumbnails = try Thumbnailer().thumbnails(
            of: try Fixtures.orientationPhoto(name), sizes: sizes.map { Thumbnailer.Target(longestEdge: $0) }
        ).map { output in
            var thumbnail = Thumbnail()
            thumbnail.size = Int32(output.target.width)
            thumbnail.data = output.data
            return thumbnail
        }
        return result
    }

    static func complete(_ client: RPCClient, _ job: Job, _ result: ThumbnailResult) async throws {
        var request = CompleteRequest()
        request.queue = "thumbnails"
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.result = result.serializedBytes()
        _ = try await client.call(JobQueueRPC.complete, request, options: .init(timeoutMilliseconds: 30_000))
    }

    /// The blob files under the data folder (what reconciliation would see).
    static func blobFiles(_ harness: Harness) -> Set<String> {
        let root = harness.dataDirectory + "/images/blobs"
        let names = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return Set(names.filter { $0.utf8.count > 3 }.map { ($0 as NSString).lastPathComponent })
    }

    @Test func aStoredJPEGGetsItsThumbnailsFromTheWorkerAndRenditionsServeThem() async throws {
        let (harness, client) = try Self.imageService(withWorker: true)
        defer { client.close(); harness.shutdown() }
        // Stored 1800×1200 with orientation 6: displayed 1200×1800.
        let original = try await Self.put(client, "Portrait_6.jpg")
        try await Self.waitUntil { try await Self.thumbnails(client, of: original.key).count == 3 }
        let made = try await Self.thumbnails(client, of: original.key).sorted { $0.width < $1.width }
        #expect(made.map { "\($0.width)×\($0.height)" } == ["43×64", "171×256", "683×1024"])
        #expect(made.allSatisfy { $0.contentType == "image/jpeg" && $0.orientation <= 1 && $0.ownerKey == "item-1" })
        // In the original's fan-out folder: one folder fsync makes the three renames durable.
        #expect(made.allSatisfy { $0.key.prefix(2) == original.key.prefix(2) && UUID(uuidString: $0.key) != nil })

        let done = try await Self.jobs(client, .done)
        #expect(done.count == 1 && done[0].attempts == 1 && done[0].workerId.hasPrefix("thumbnail-worker@"))
        let kept = try ThumbnailResult(serializedBytes: done[0].result)
        #expect(Set(kept.thumbnails.map(\.key)) == Set(made.map(\.key)) && kept.thumbnails.allSatisfy { $0.data.isEmpty })

        // GetRendition of a stored size answers the stored thumbnail itself.
        var rendition = GetRenditionRequest()
        rendition.key = original.key
        rendition.width = 256
        rendition.height = 256
        let served = try await client.call(ImageServiceRPC.getRendition, rendition)
        #expect(served.info?.key == made[1].key && served.info?.kind == .thumbnail)
        #expect(Self.blobFiles(harness) == Set([original.key] + made.map(\.key)))

        // Deleting the original takes its thumbnails with it.
        var delete = DeleteImageRequest()
        delete.key = original.key
        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        #expect(try await Self.thumbnails(client, of: original.key).isEmpty && Self.blobFiles(harness).isEmpty)
    }

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
        #expect(try await worker.call(HealthRPC.check, HealthCheckRequest()).conditions.isEmpty)
    }

    /// How many Complete calls the image service answered RESOURCE_EXHAUSTED.
    static func refusedCompletes(_ client: RPCClient) async throws -> UInt64 {
        let stats = try await client.call(MetricsRPC.stats, ProcessStatsRequest())
        let complete = stats.methods.first { $0.method == JobQueueRPC.complete.path }
        return complete?.codes.first { $0.code == .resourceExhausted }?.count ?? 0
    }

    @Test func enqueueThumbnailsMakesOneBatchAndMissingOnlySkipsWhatIsThere() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        var originals: [ImageInfo] = []
        for name in ["Landscape_1.jpg", "Landscape_2.jpg", "Portrait_3.jpg", "Portrait_4.jpg"] {
            originals.append(try await Self.put(client, name))
        }
        // Two of the four get their thumbnails; the other two jobs stay QUEUED.
        for _ in 0..<2 {
            let job = try await Self.lease(client, worker: "w")
            let key = try ThumbnailJob(serializedBytes: job.payload).imageKey
            let name = ["Landscape_1.jpg", "Landscape_2.jpg", "Portrait_3.jpg", "Portrait_4.jpg"][originals.firstIndex { $0.key == key }!]
            try await Self.complete(client, job, try Self.result(of: name, sizes: [64, 256, 1024]))
        }
        var sweep = EnqueueThumbnailsRequest()
        sweep.all = true
        sweep.missingOnly = true
        let missing = try await client.call(ImageServiceRPC.enqueueThumbnails, sweep)
        // The two still queued join the batch; the two done need nothing.
        #expect(missing.enqueued == 0 && missing.alreadyPending == 2 && missing.alreadyDone == 2 && !missing.batchId.isEmpty)

        var again = EnqueueThumbnailsRequest()
        again.keys = originals.map { $0.key.uppercased() }
        again.sizes = [1024, 32]
        let forced = try await client.call(ImageServiceRPC.enqueueThumbnails, again)
        #expect(forced.enqueued == 4 && forced.alreadyPending == 0 && forced.batchId != missing.batchId)
        var batch = GetBatchRequest()
        batch.queue = "thumbnails"
        batch.batchId = forced.batchId
        let progress = try await client.call(JobQueueRPC.getBatch, batch)
        #expect(progress.total == 4 && progress.pending == 4 && progress.done == 0)
        let payloads = try await Self.jobs(client, .queued).filter { $0.batchId == forced.batchId }.map { try ThumbnailJob(serializedBytes: $0.payload) }
        #expect(payloads.count == 4 && payloads.allSatisfy { $0.sizes == [32, 1024] })

        // The worker runs the rest; the batch finishes, and a 1024 made again replaces the first one.
        let before = try await Self.thumbnails(client, of: originals[0].key)
        try harness.start(.thumbnailWorker)
        try await Self.waitUntil { try await client.call(JobQueueRPC.getBatch, batch).pending == 0 }
        #expect(try await client.call(JobQueueRPC.getBatch, batch).done == 4)
        let after = try await Self.thumbnails(client, of: originals[0].key)
        #expect(after.count == 4 && Set(after.map(\.width)).contains(32))
        let replaced = try #require(before.first { max($0.width, $0.height) == 1024 })
        #expect(!after.contains { $0.key == replaced.key } && !Self.blobFiles(harness).contains(replaced.key))
    }

    @Test func enqueueThumbnailsRefusesWhatItCannotDoNamingIt() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        let original = try await Self.put(client, "Landscape_1.jpg")
        func refusal(_ edit: (inout EnqueueThumbnailsRequest) -> Void) async -> RPCError? {
            var request = EnqueueThumbnailsRequest()
            edit(&request)
            let sent = request
            return await rpcError { try await client.call(ImageServiceRPC.enqueueThumbnails, sent) }
        }
        let neither = await refusal { _ in }
        #expect(neither?.code == .invalidArgument && neither?.message.contains("keys, or all") == true)
        let both = await refusal { $0.all = true; $0.keys = [original.key] }
        #expect(both?.code == .invalidArgument && both?.message.contains("not both") == true)
        let unknown = UUID().uuidString.lowercased()
        let missing = await refusal { $0.keys = [original.key, unknown] }
        #expect(missing?.code == .notFound && missing?.message.contains(unknown) == true)
        let notUUID = await refusal { $0.keys = ["photo.jpg"] }
        #expect(notUUID?.code == .invalidArgument && notUUID?.message.contains("\"photo.jpg\" is not a UUID") == true)
        let badSize = await refusal { $0.all = true; $0.sizes = [64, 0] }
        #expect(badSize?.code == .invalidArgument && badSize?.message.contains("0 is not a new size in 1…8192") == true)

        var thumbnail = PutImageRequest()
        thumbnail.data = try Self.result(of: "Landscape_1.jpg", sizes: [64]).thumbnails[0].data
        thumbnail.kind = .thumbnail
        thumbnail.parentKey = original.key
        let child = try await client.call(ImageServiceRPC.putImage, thumbnail)
        let ofThumbnail = await refusal { $0.keys = [child.key] }
        #expect(ofThumbnail?.code == .failedPrecondition && ofThumbnail?.message.contains("JPEG originals and edits only") == true)
        // A thumbnail a client put counts as its longest edge for missing_only.
        let sweep = try await client.call(ImageServiceRPC.enqueueThumbnails, {
            var request = EnqueueThumbnailsRequest()
            request.keys = [original.key]
            request.sizes = [64]
            request.missingOnly = true
            return request
        }())
        #expect(sweep.enqueued == 0 && sweep.alreadyDone == 1 && sweep.batchId.isEmpty)
    }

    @Test func aPoisonImageIsDeadAtOnceWithItsReasonAndTheWorkerGoesOn() async throws {
        let (harness, client) = try Self.imageService(withWorker: true)
        defer { client.close(); harness.shutdown() }
        // Pillow's hopper_bad_exif.jpg is stored (its segments are whole) but TurboJPEG stops at
        // a warning decoding it: every attempt would fail the same way.
        var poison = PutImageRequest()
        poison.data = try Fixtures.pillowImage("hopper_bad_exif.jpg")
        let bad = try await client.call(ImageServiceRPC.putImage, poison)
        try await Self.waitUntil { try await !Self.jobs(client, .dead).isEmpty }
        let dead = try #require(try await Self.jobs(client, .dead).first)
        #expect(try ThumbnailJob(serializedBytes: dead.payload).imageKey == bad.key)
        #expect(dead.attempts == 1 && dead.errors.count == 1, "\(dead)")
        let error = try #require(dead.errors.first)
        #expect(error.workerId.hasPrefix("thumbnail-worker@") && error.atMs > 0)
        #expect(error.message.hasPrefix("image \(bad.key) cannot be made into thumbnails:"), "\(error.message)")
        #expect(dead.lastError == error.message)

        // The worker lives on: the next photo gets its thumbnails.
        let good = try await Self.put(client, "Landscape_1.jpg")
        try await Self.waitUntil { try await Self.thumbnails(client, of: good.key).count == 3 }
        #expect(harness.isRunning(.thumbnailWorker))
    }

    @Test func aBatchOfFiveHundredImagesIsThumbnailedByTwoWorkersWithNoDuplicates() async throws {
        let (harness, client) = try Self.imageService()
        defer { client.close(); harness.shutdown() }
        var keys: [String] = []
        for seed in 0..<500 {
            var request = PutImageRequest()
            request.data = try CascadeOrderTests.jpeg(width: 80, height: 60, seed: seed)
            keys.append(try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 30_000)).key)
        }
        var sweep = EnqueueThumbnailsRequest()
        sweep.all = true
        sweep.missingOnly = true
        let enqueued = try await client.call(ImageServiceRPC.enqueueThumbnails, sweep)
        // The puts' own 500 jobs, pending, make up the batch (two pages of the sweep).
        #expect(enqueued.enqueued == 0 && enqueued.alreadyPending == 500 && enqueued.alreadyDone == 0)

        // Two worker processes' worth: the harness's and a second composition beside it.
        try harness.start(.thumbnailWorker)
        let second = try ThumbnailWorkerHost.make(
            WorkerConfiguration(healthEndpoint: "ipc://\(harness.dataDirectory)/../second-worker.sock", imageServiceEndpoint: harness.endpoints.imageRPC),
            context: harness.context, logger: Logger(label: "second-worker", level: .warning))
        try second.start()
        defer { second.stop() }
        var batch = GetBatchRequest()
        batch.queue = "thumbnails"
        batch.batchId = enqueued.batchId
        try await Self.waitUntil { try await client.call(JobQueueRPC.getBatch, batch).pending == 0 }
        let finished = try await client.call(JobQueueRPC.getBatch, batch)
        #expect(finished.total == 500 && finished.done == 500 && finished.dead == 0 && finished.finishedAtMs > 0)

        var all: [ImageInfo] = []
        var list = ListImagesRequest()
        list.kind = .thumbnail
        list.pageSize = 1000
        while true {
            let page = try await client.call(ImageServiceRPC.listImages, list)
            all += page.images
            guard !page.nextPageToken.isEmpty else { break }
            list.pageToken = page.nextPageToken
        }
        #expect(all.count == 1500)
        let perParent = Dictionary(grouping: all, by: \.parentKey)
        #expect(Set(perParent.keys) == Set(keys) && perParent.values.allSatisfy { $0.count == 3 })
        let done = try await Self.jobs(client, .done)
        #expect(done.count == 500 && done.allSatisfy { $0.attempts == 1 })
        #expect(Set(done.map(\.workerId)).count == 2, "both workers took jobs: \(Set(done.map(\.workerId)))")
    }
}
