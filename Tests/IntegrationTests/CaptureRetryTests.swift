@testable import CaptureWorker
import Digest
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport

/// A capture's next attempt after a worker died mid-job: it takes up what the earlier attempt
/// stored and attached under the job's keys, and a failure never deletes what is not its own.
@Suite struct CaptureRetryTests {
    /// The key the job's attempts store its original under (`CaptureJobHandler.storedKey`).
    static func originalKey(of job: CaptureJob) -> String {
        var queued = Job()
        (queued.queue, queued.jobId, queued.createdAtMs) = ("capture", job.jobId, job.createdAtMs)
        return NameBasedUUID.make(queued.captureKeyName("original"))
    }

    @Test func aRetryOfAMovieOverThirtyTwoMebibytesReusesTheOriginalAnEarlierAttemptCommitted() async throws {
        // The worker is not running yet: each job waits in the queue while the test plays its
        // first attempt, which died once its chunked upload was committed (and, for the
        // second, once the movie was attached too).
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let movies = [CaptureSamples.movie(count: 40 << 20, seed: 1), CaptureSamples.movie(count: 36 << 20, seed: 2)]
        for (index, movie) in movies.enumerated() {
            try Data(movie).write(to: URL(fileURLWithPath: suite.library + "/movie-\(index).mp4"))
        }
        var jobs: [CaptureJob] = []
        for index in movies.indices {
            let job = try await suite.enqueue { $0.source = .library; $0.sourcePath = "movie-\(index).mp4"; $0.mediaType = .movie }
            let committed = try await suite.upload(movies[index], key: Self.originalKey(of: job), owner: suite.item)
            #expect(committed.key == Self.originalKey(of: job) && committed.mediaType == .movie)
            jobs.append(job)
        }
        var attach = AttachPhotoRequest()
        attach.itemKey = suite.item
        attach.imageKey = Self.originalKey(of: jobs[1])
        _ = try await suite.items.call(ItemServiceRPC.attachPhoto, attach)

        try suite.harness.start(.captureWorker)
        for (job, movie) in zip(jobs, movies) {
            let ended = try await suite.finished(job.jobId)
            #expect(ended.state == .done && ended.originalKey == Self.originalKey(of: job) && !ended.duplicate, "\(ended.error)")
            #expect(SHA256.checksum(try await suite.bytes(of: Self.originalKey(of: job))) == SHA256.checksum(movie))
        }
        #expect(try await suite.getItem().photoKeys == [Self.originalKey(of: jobs[1]), Self.originalKey(of: jobs[0])])
        #expect(Set(try await suite.imagesOf(suite.item).map(\.key)) == Set(jobs.map(Self.originalKey)))
    }

    @Test func aRetryFindingItsPhotoAttachedMeanwhileNamesThatOneAndDeletesWhatTheEarlierAttemptStored() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        let job = try await suite.enqueue { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        // The first attempt stored the lamp under the job's key and died before attaching it;
        // meanwhile the same bytes were stored and attached by someone else.
        var put = PutImageRequest()
        put.key = Self.originalKey(of: job)
        put.ownerKey = suite.item
        put.data = lamp
        _ = try await suite.images.call(ImageServiceRPC.putImage, put)
        put.key = ""
        let theirs = try await suite.images.call(ImageServiceRPC.putImage, put).key
        var attach = AttachPhotoRequest()
        attach.itemKey = suite.item
        attach.imageKey = theirs
        _ = try await suite.items.call(ItemServiceRPC.attachPhoto, attach)

        try suite.harness.start(.captureWorker)
        let ended = try await suite.finished(job.jobId)
        #expect(ended.state == .done && ended.duplicate && ended.originalKey == theirs, "\(ended.error)")
        #expect(try await suite.getItem().photoKeys == [theirs])
        #expect(try await suite.imagesOf(suite.item).map(\.key) == [theirs])
    }

    /// Other bytes under the job's own key (an earlier attempt read a file that changed since,
    /// or a key that can compute the job's key naming stored something first) are never
    /// attached as the capture: the job fails naming both checksums, for a put and an upload.
    @Test func otherBytesUnderTheJobsOwnKeyAreNeverTakenUp() async throws {
        let suite = try await CaptureSuite(startWorker: false)
        defer { suite.stop() }
        let photo = try await suite.enqueue { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        var put = PutImageRequest()
        put.key = Self.originalKey(of: photo)
        put.ownerKey = suite.item
        put.data = try Fixtures.orientationPhoto("Portrait_1.jpg")
        let planted = try await suite.images.call(ImageServiceRPC.putImage, put)

        let movie = CaptureSamples.movie(count: 34 << 20, seed: 3)
        try Data(movie).write(to: URL(fileURLWithPath: suite.library + "/movie.mp4"))
        let film = try await suite.enqueue { $0.source = .library; $0.sourcePath = "movie.mp4"; $0.mediaType = .movie }
        let other = try await suite.upload(CaptureSamples.movie(count: 34 << 20, seed: 4), key: Self.originalKey(of: film), owner: suite.item)

        try suite.harness.start(.captureWorker)
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        for (job, stored, read) in [(photo, planted.checksum, SHA256.checksum(lamp)), (film, other.checksum, SHA256.checksum(movie))] {
            let ended = try await suite.finished(job.jobId)
            #expect(ended.state == .dead && ended.errorCode == StatusCode.failedPrecondition.rawValue, "\(ended.state) \(ended.error)")
            #expect(ended.error.contains(
                "image \(Self.originalKey(of: job)), under this capture's own key, is stored already with other bytes (\(stored)) than this capture read (\(read))"),
                "\(ended.error)")
        }
        #expect(try await suite.getItem().photoKeys.isEmpty, "nothing attached as the capture")
    }
}
