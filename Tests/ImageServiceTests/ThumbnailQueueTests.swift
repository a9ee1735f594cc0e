import Foundation
import Proto
import JobQueue
import RPC
import SQLite
import Testing
@testable import ImageService

/// The `thumbnails` queue image-service serves: a stored JPEG original gets its job in the
/// transaction that adds its row.
@Suite struct ThumbnailQueueTests {
    static func stats(_ client: RPCClient) async throws -> JobStatsResponse {
        var request = JobStatsRequest()
        request.queue = ThumbnailQueue.name
        return try await client.call(JobQueueRPC.stats, request)
    }

    @Test func aStoredJPEGHasOneThumbnailJobForItsSizesAndAMovieOrAThumbnailNone() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }

        var put = PutImageRequest()
        put.data = try Samples.jpeg(width: 64, height: 48)
        put.key = "0f000000-0000-4000-8000-000000000001"
        let original = try await client.call(ImageServiceRPC.putImage, put)
        // The same put again (its key makes it idempotent), an AVI movie (posters are made from
        // MP4, MOV, 3GP, Matroska and WebM only: MovieOriginalTests) and a thumbnail add nothing.
        _ = try await client.call(ImageServiceRPC.putImage, put)
        var movie = PutImageRequest()
        movie.data = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("AVI LIST".utf8) + [UInt8](repeating: 0, count: 3000)
        _ = try await client.call(ImageServiceRPC.putImage, movie)
        var thumbnail = PutImageRequest()
        thumbnail.data = try Samples.jpeg(width: 16, height: 12)
        thumbnail.kind = .thumbnail
        thumbnail.parentKey = original.key
        _ = try await client.call(ImageServiceRPC.putImage, thumbnail)
        #expect(try await Self.stats(client).ready == 1)

        var lease = LeaseRequest()
        lease.queue = ThumbnailQueue.name
        lease.workerId = "test"
        let jobs = try await client.call(JobQueueRPC.lease, lease).jobs
        let payload = try ThumbnailJob(serializedBytes: try #require(jobs.first).payload)
        // The first row stored: generation 1.
        #expect(payload.imageKey == original.key && payload.sizes == [64, 256, 1024] && payload.imageGeneration == 1)
        #expect(jobs.first?.dedupeKey == "image:\(original.key)@1:64,256,1024")
    }

    @Test func thumbnailJobsFromBeforeGenerationsGetTheirImagesCurrentOneOnUpgrade() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/images.db"
        let live = "0f000000-0000-4000-8000-000000000003", gone = "0f000000-0000-4000-8000-000000000004"
        do {
            // images.db as schema 7 left it: jobs named their image by key alone.
            let db = try Database(path: path)
            _ = try Migrator(Array(ImageIndex.migrator.migrations.prefix(7))).migrate(db)
            try JobStore.migrate(db)
            let jobs = try JobStore(db: db, queues: [ThumbnailQueue.configuration()])
            try db.execute("""
                INSERT INTO images (seq, key, owner_key, kind, parent_key, media_type, content_type, size_bytes, width, height,
                  orientation, checksum, created_at_ms) VALUES (41, ?, '', 1, '', 1, 'image/jpeg', 1, 1, 1, 1, '', 1)
                """, [.text(live)])
            for key in [live, gone] {
                var old = ThumbnailJob()
                old.imageKey = key
                old.sizes = [64, 256]
                _ = try jobs.enqueue(queue: ThumbnailQueue.name, payload: old.serializedBytes(), dedupeKey: "image:\(key):64,256", now: 1)
            }
            try db.close()
        }
        let index = try ImageIndex(path: path)
        defer { try? index.close() }
        let rows = try index.db.query("SELECT payload, dedupe_key FROM jobs ORDER BY id").map {
            (try ThumbnailJob(serializedBytes: $0[0].blobValue ?? []), $0[1].stringValue ?? "")
        }
        #expect(rows.map(\.0.imageGeneration) == [41, 0] && rows.map(\.0.sizes) == [[64, 256], [64, 256]])
        #expect(rows.map(\.1) == ["image:\(live)@41:64,256", "image:\(gone):64,256"])
    }

    @Test func aRowThatDoesNotCommitLeavesNoJobAndAJobNeverOutlivesARolledBackRow() async throws {
        let folder = try TemporaryFolder()
        let index = try ImageIndex(path: folder.path + "/images.db")
        defer { try? index.close() }
        var info = ImageInfo()
        info.key = "0f000000-0000-4000-8000-000000000002"
        info.kind = .original
        info.mediaType = .image
        info.contentType = "image/jpeg"
        info.createdAtMs = 1
        struct Crash: Error {}
        // The row and its job are written, then the transaction fails before it commits.
        #expect(throws: Crash.self) {
            try index.write {
                try index.insert(info, contentCheck: "")
                #expect(try index.db.scalar("SELECT count(*) FROM jobs")?.int64Value == 1)
                throw Crash()
            }
        }
        #expect(try index.get(info.key) == nil)
        #expect(try index.db.scalar("SELECT count(*) FROM jobs")?.int64Value == 0)
        try index.insert(info, contentCheck: "")
        #expect(try index.get(info.key) != nil)
        #expect(try index.db.scalar("SELECT count(*) FROM jobs")?.int64Value == 1)
    }

    @Test func thumbnailSizesAreParsedStrictly() throws {
        #expect(try ImageServiceConfiguration.thumbnailSizes("256, 64,1024") == [64, 256, 1024])
        #expect(try ImageServiceConfiguration.thumbnailSizes("") == [])
        for bad in ["0", "64,64", "9000", "a", "64,,256"] {
            #expect(throws: (any Error).self, "\(bad)") { try ImageServiceConfiguration.thumbnailSizes(bad) }
        }
    }
}
