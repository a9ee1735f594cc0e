import Foundation
import Harness
import Proto
import RPC
import Testing
import TestSupport

/// What the `capture` queue keeps of a capture once its job ended: not the photo's bytes sent
/// inline (up to 8 MiB each), which are in the image service by then or never will be.
@Suite struct QueueRetentionTests {
    static func job(_ suite: CaptureSuite, _ id: String) async throws -> Job {
        var get = GetJobRequest()
        get.queue = "capture"
        get.jobId = id
        return try await suite.items.call(JobQueueRPC.getJob, get)
    }

    @Test func aCapturesInlineBytesAreDroppedFromItsJobOnceItIsDoneOrDead() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        let photo = try Fixtures.orientationPhoto("Landscape_3.jpg")
        let done = try await suite.capture { $0.source = .upload; $0.data = photo; $0.makePrimary = true }
        #expect(done.state == .done, "\(done.error)")
        // Not a photo: failed for good at its first attempt.
        let dead = try await suite.capture { $0.source = .upload; $0.data = Array("not a photo at all".utf8) }
        #expect(dead.state == .dead, "\(dead.state)")

        for id in [done.jobId, dead.jobId] {
            let kept = try CaptureRequest(serializedBytes: try await Self.job(suite, id).payload)
            // The rest of the request stays: what was asked, for whom.
            #expect(kept.data.isEmpty && kept.itemKey == suite.item && kept.source == .upload, "job \(id): \(kept.data.count) bytes kept")
        }
        #expect(try CaptureRequest(serializedBytes: try await Self.job(suite, done.jobId).payload).makePrimary)
        // Without its bytes the dead capture cannot run again: RetryDead leaves it DEAD.
        var retry = RetryDeadRequest()
        retry.queue = "capture"
        retry.jobIds = [dead.jobId]
        #expect(try await suite.items.call(JobQueueRPC.retryDead, retry).requeued == 0)
        #expect(try await Self.job(suite, dead.jobId).state == .dead)
    }
}
