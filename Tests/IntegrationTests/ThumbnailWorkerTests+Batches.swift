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

/// EnqueueThumbnails and its batches: what it enqueues or refuses, and a large batch shared by two workers.
extension ThumbnailWorkerTests {
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
        #expect(ofThumbnail?.code == .failedPrecondition && ofThumbnail?.message.contains("JPEG, PNG and HEIC originals and edits and MP4, MOV, 3GP, Matroska and WebM movies only") == true)
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
