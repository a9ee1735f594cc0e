import Foundation
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import WorkerRuntime

/// A job that never ends does not hold its lease for ever: past the runner's maximum run time
/// its heartbeats stop and it fails for good, naming the limit, even if its handler does not
/// heed the cancellation.
@Suite struct JobRunnerRunTimeTests {
    @Test func aJobPastTheMaximumRunTimeFailsForGoodNamingItWhileItsHandlerStillBlocks() async throws {
        let fixture = try QueueFixture()
        defer { fixture.stop() }
        let connection = try JobRunnerTests.connection(fixture)
        defer { connection.stop() }
        var configuration = JobRunnerTests.configuration(concurrency: 1, leaseMs: 1000)
        configuration.maxRunMilliseconds = 1500
        // The handler blocks its thread, deaf to cancellation, until the test lets it go.
        let release = DispatchSemaphore(value: 0)
        let entered = Shared(0)
        let runner = JobRunner(name: "runner", connection: connection, configuration: configuration, logger: testLogger) { _ in
            entered.withLock { $0 += 1 }
            release.wait()
            return []
        }
        try runner.start()
        try await fixture.enqueue(1)
        #expect(try await eventually(within: 30) { entered.value == 1 })
        var dead = JobStatsResponse()
        try await JobRunnerTests.waitUntil {
            dead = try await JobRunnerTests.stats(fixture)
            return dead.dead == 1
        }
        #expect(dead.dead == 1 && dead.leased == 0, "\(dead)")
        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.state = .dead
        let job = try #require(try await fixture.client.call(JobQueueRPC.listJobs, list).jobs.first)
        #expect(job.attempts == 1 && job.lastError.hasPrefix("DEADLINE_EXCEEDED (4)"), "\(job.lastError)")
        #expect(job.lastError.contains("1500 ms") && job.lastError.contains("--max-job-ms"), "\(job.lastError)")
        release.signal()
        await offThePool { runner.stop() }
        #expect(entered.value == 1)
    }
}
