import Foundation
import ItemService
import JobQueue
import Locking
import Proto
import RPC
import Runtime
import Testing
import WorkerRuntime

/// The in-process queue client on a real items.db (the cascade queue, with the tests' fast
/// backoff): what a `JobRunner` beside the store gets instead of JobQueue over RPC.
@Suite struct InProcessJobQueueTests {
    /// Runs `body` with a started owner of items.db in a temporary folder, its cascade queue's
    /// notifier, and a client of that queue on `clock`; stops the owner after.
    static func withQueue(
        _ clock: any WallClock, pullInBeyond: Int64? = nil,
        _ body: (ItemStoreQueue, JobNotifier, InProcessJobQueue<ItemStoreQueue>) async throws -> Void
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = ItemStoreQueue(path: folder.path + "/items.db", cascade: CascadeQueue.configuration(retry: fastCascadeRetry))
        try store.start()
        defer { store.stop() }
        let notifier = JobNotifier()
        try await body(store, notifier, InProcessJobQueue(owner: store, notifier: notifier, clock: clock, pullInBeyond: pullInBeyond))
    }

    /// Creates and deletes an item at `now`: one cascade job, due then. Returns the item's key.
    @discardableResult
    static func deleteAnItem(_ store: ItemStoreQueue, _ name: String, now: Int64) async throws -> String {
        try await store.perform { store in
            let key = try store.create(createRequest(name), now: now).item.key
            _ = try store.delete(key: key, now: now)
            return key
        }
    }

    static func lease(_ queue: InProcessJobQueue<ItemStoreQueue>, wait: Int32 = 0, worker: String = "test-worker") async throws -> [Job] {
        var request = LeaseRequest()
        request.queue = CascadeQueue.name
        request.workerId = worker
        request.maxJobs = 1
        request.waitMs = wait
        return try await queue.lease(request).jobs
    }

    static func job(_ store: ItemStoreQueue, _ id: String) async throws -> Job {
        var request = GetJobRequest()
        request.queue = CascadeQueue.name
        request.jobId = id
        return try await store.read { [request] in try $0.job(request) }
    }

    static func failRequest(_ job: Job, retryAfter: Int32 = 0, giveBack: Bool = false) -> FailRequest {
        var request = FailRequest()
        request.queue = CascadeQueue.name
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.error = "boom"
        request.retryAfterMs = retryAfter
        request.giveBack = giveBack
        return request
    }

    @Test func aLeaseWaitingForWorkLeasesTheJobWhoseSignalWakesIt() async throws {
        try await Self.withQueue(SystemClock()) { store, notifier, queue in
            let started = monotonicMilliseconds()
            let waiting = Task { try await Self.lease(queue, wait: 20_000) }
            while notifier.waiterCount == 0 { try await Task.sleep(for: .milliseconds(5)) }
            let key = try await Self.deleteAnItem(store, "Doomed", now: SystemClock().nowMilliseconds())
            notifier.signal()
            let jobs = try await waiting.value
            #expect(jobs.count == 1 && jobs[0].state == .running && jobs[0].workerId == "test-worker")
            #expect(try DeleteImagesForOwnerRequest(serializedBytes: jobs[0].payload).ownerKey == key)
            #expect(monotonicMilliseconds() - started < 15_000, "woken by the signal, not at the end of its wait")
        }
    }

    @Test func aLeaseThatFindsNothingAnswersEmptyAtTheEndOfItsWaitOrAtOnceWhenCancelled() async throws {
        try await Self.withQueue(SystemClock()) { _, notifier, queue in
            let started = monotonicMilliseconds()
            #expect(try await Self.lease(queue, wait: 300).isEmpty)
            #expect(monotonicMilliseconds() - started >= 250)

            let waiting = Task { try await Self.lease(queue, wait: 60_000) }
            while notifier.waiterCount == 0 { try await Task.sleep(for: .milliseconds(5)) }
            let cancelled = monotonicMilliseconds()
            waiting.cancel()
            #expect(try await waiting.value.isEmpty)
            #expect(monotonicMilliseconds() - cancelled < 30_000)
        }
    }

    @Test func extendCompleteAndFailGoToTheStoreAndAStaleLeaseIsRefusedAsTheServiceWould() async throws {
        let clock = ManualClock(milliseconds: 1_000_000)
        try await Self.withQueue(clock) { store, _, queue in
            try await Self.deleteAnItem(store, "First", now: 1_000_000)
            try await Self.deleteAnItem(store, "Second", now: 1_000_000)
            let first = try #require(try await Self.lease(queue).first)
            clock.advance(by: 10)
            var extend = ExtendRequest()
            extend.queue = CascadeQueue.name
            extend.jobId = first.jobId
            extend.leaseId = first.leaseId
            // The queue's default lease, 60 s, from now.
            #expect(try await queue.extend(extend, timeoutMilliseconds: 1000).leaseExpiresAtMs == 1_060_010)
            var complete = CompleteRequest()
            complete.queue = CascadeQueue.name
            complete.jobId = first.jobId
            complete.leaseId = first.leaseId
            _ = try await queue.complete(complete, idempotencyKey: "k")
            #expect(try await Self.job(store, first.jobId).state == .done)
            complete.leaseId = "not-its-lease"
            var refused: StatusCode?
            do { _ = try await queue.complete(complete, idempotencyKey: "k2") } catch { refused = (error as? RPCError)?.code }
            #expect(refused == .failedPrecondition)

            // A failure: QUEUED after the backoff (50 ms ± 25 %), which the answer tells.
            let second = try #require(try await Self.lease(queue).first)
            let failed = try await queue.fail(Self.failRequest(second), idempotencyKey: "f")
            let next = try #require(failed.nextAttemptInMilliseconds)
            #expect(failed.response.state == .queued && (37...63).contains(next), "\(next)")
            let after = try await Self.job(store, second.jobId)
            #expect(after.attempts == 1 && after.errors.map(\.message) == ["boom"] && after.runAtMs == clock.nowMilliseconds() + next)

            // Given back: due now, the attempt not counted, no error kept.
            clock.advance(by: 100)
            let again = try #require(try await Self.lease(queue).first)
            let given = try await queue.fail(Self.failRequest(again, giveBack: true), idempotencyKey: "g")
            #expect(given.response.state == .queued && given.nextAttemptInMilliseconds == 0)
            let back = try await Self.job(store, second.jobId)
            #expect(back.attempts == 1 && back.errors.count == 1)
        }
    }

    @Test func aJobDueLaterThanTheLongestBackoffIsPulledInWhenTheQueueSaysSo() async throws {
        let clock = ManualClock(milliseconds: 1_000_000)
        for pullIn in [nil, Int64(300)] {
            try await Self.withQueue(clock, pullInBeyond: pullIn) { store, _, queue in
                try await Self.deleteAnItem(store, "Doomed", now: clock.nowMilliseconds())
                let job = try #require(try await Self.lease(queue).first)
                // Scheduled an hour off: as if the wall clock had gone back an hour since.
                _ = try await queue.fail(Self.failRequest(job, retryAfter: 3_600_000), idempotencyKey: "f")
                let leased = try await Self.lease(queue)
                #expect(leased.map(\.jobId) == (pullIn == nil ? [] : [job.jobId]), "pull-in beyond \(String(describing: pullIn))")
            }
        }
    }

    @Test func takingBackFailsOnlyTheWorkersOwnLeasesDueAtOnce() async throws {
        let clock = ManualClock(milliseconds: 1_000_000)
        try await Self.withQueue(clock) { store, _, queue in
            try await Self.deleteAnItem(store, "Mine", now: 1_000_000)
            try await Self.deleteAnItem(store, "Theirs", now: 1_000_000)
            let mine = try #require(try await Self.lease(queue, worker: CascadeRunner.workerID).first)
            let theirs = try #require(try await Self.lease(queue, worker: "someone-else").first)
            let taken = try await queue.takeBack(
                queue: CascadeQueue.name, leasesOf: CascadeRunner.workerID, error: "stopped", retryAfterMilliseconds: 1)
            #expect(taken == 1)
            let back = try await Self.job(store, mine.jobId), held = try await Self.job(store, theirs.jobId)
            #expect(back.state == .queued && back.runAtMs == 1_000_001 && back.errors.map(\.message) == ["stopped"], "\(back)")
            #expect(held.state == .running && held.leaseId == theirs.leaseId)
        }
    }

    @Test func aRunnerOnItRunsOneJobAtATimeAndAPausingFailureHoldsTheNextBackUntilItsRetry() async throws {
        try await Self.withQueue(SystemClock()) { store, notifier, queue in
            let now = SystemClock().nowMilliseconds()
            let first = try await Self.deleteAnItem(store, "First", now: now - 10)
            let second = try await Self.deleteAnItem(store, "Second", now: now)
            // Each handler run: the owner and when it began.
            let runs = Locked<[(owner: String, at: Int64)]>([])
            let configuration = JobRunner.Configuration(
                queue: CascadeQueue.name, workerID: "test-runner", concurrency: 1, waitMilliseconds: 2000, drainMilliseconds: 0,
                maxPauseMilliseconds: 5000)
            let runner = JobRunner(name: "test-runner", queue: queue, configuration: configuration, logger: testLogger) { job in
                let owner = try DeleteImagesForOwnerRequest(serializedBytes: job.payload).ownerKey
                let tries = runs.withLock { runs in
                    runs.append((owner, monotonicMilliseconds()))
                    return runs.count
                }
                // The first run fails as if what it calls were down: no job before its retry.
                if tries == 1 { throw JobFailure("down", retryAfterMilliseconds: 600, pausesRunner: true) }
                return []
            }
            runner.start()
            let end = monotonicMilliseconds() + 30_000
            while runner.counts.completed < 2 && monotonicMilliseconds() < end { try await Task.sleep(for: .milliseconds(10)) }
            await Task.detached { runner.stop() }.value
            let seen = runs.withLock { $0 }
            #expect(seen.map(\.owner) == [first, second, first], "earliest due first; the failed one behind")
            #expect(seen.count == 3 && seen[1].at - seen[0].at >= 500, "paused until the failed job's retry")
            let counts = runner.counts
            #expect(counts.completed == 2 && counts.failed == 1 && notifier.waiterCount == 0)
        }
    }
}
