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
}
