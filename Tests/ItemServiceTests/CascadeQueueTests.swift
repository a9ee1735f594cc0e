import Foundation
@testable import ItemService
import JobQueue
import Proto
import SQLite
import Testing

/// The `cascade` queue in items.db, without sockets: a delete's job, its order and backoff on
/// an injected clock, and the move of the old outbox into it.
@Suite struct CascadeQueueTests {
    static func lease(_ store: ItemStore, max: Int32 = 1, now: Int64) throws -> [Job] {
        var request = LeaseRequest()
        request.queue = CascadeQueue.name
        request.maxJobs = max
        request.workerId = CascadeRunner.workerID
        return try store.write { try store.jobs.lease(request, now: now).jobs }
    }

    static func fail(_ store: ItemStore, _ job: Job, retryAfter: Int32 = 0, now: Int64) throws -> Job {
        var request = FailRequest()
        request.queue = CascadeQueue.name
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.error = "boom"
        request.retryAfterMs = retryAfter
        return try store.write { try store.jobs.fail(request, now: now) }
    }

    static func owner(_ job: Job) throws -> String {
        try DeleteImagesForOwnerRequest(serializedBytes: job.payload).ownerKey
    }

    @Test func theCascadeRetriesForeverFrom200MillisecondsDoublingToTenSeconds() throws {
        let retry = CascadeQueue.retry
        #expect(retry.maxAttempts == .max)
        #expect((150...250).contains(retry.delayMilliseconds(afterAttempt: 1, unit: 0)))
        #expect((150...250).contains(retry.delayMilliseconds(afterAttempt: 1, unit: 0.999)))
        #expect((600...1_000).contains(retry.delayMilliseconds(afterAttempt: 3, unit: 0.5)))
        #expect((7_500...10_000).contains(retry.delayMilliseconds(afterAttempt: 40, unit: 0)))
        #expect(retry.delayMilliseconds(afterAttempt: .max - 1, unit: 0.999) <= 10_000)

        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        let key = try store.create(createRequest("Doomed"), now: 1).item.key
        _ = try store.delete(key: key, now: 2)
        // 200 failures, each at its next run_at: still owed, the delay capped at 10 s.
        var now: Int64 = 2
        for attempt in 1...200 {
            let job = try #require(try Self.lease(store, now: now).first)
            #expect(job.attempts == Int32(attempt) && job.dedupeKey == "owner:\(key)")
            let failed = try Self.fail(store, job, now: now)
            #expect(failed.state == .queued && failed.runAtMs - now <= 10_000)
            if attempt > 10 { #expect(failed.runAtMs - now >= 7_500) }
            now = failed.runAtMs
        }
        #expect(try store.stats().pendingCascades == 1)
    }

    @Test func cascadeJobsComeEarliestDueFirstAndFailingOnesMoveBack() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let store = try ItemStore(path: folder.path + "/items.db")
        var keys: [String] = []
        for index in 0..<5 {
            let key = try store.create(createRequest("Item \(index)"), now: 1).item.key
            _ = try store.delete(key: key, now: 2)
            keys.append(key)
        }
        #expect(try store.stats().pendingCascades == 5)
        let first = try Self.lease(store, max: 2, now: 1_000)
        #expect(try first.map(Self.owner) == Array(keys.prefix(2)))
        for job in first { _ = try Self.fail(store, job, retryAfter: 500, now: 1_000) }
        // The two that failed wait behind the rest.
        let second = try Self.lease(store, max: 2, now: 1_000)
        #expect(try second.map(Self.owner) == [keys[2], keys[3]])
        // One scheduled further off than any backoff (the wall clock went back since).
        _ = try Self.fail(store, second[0], retryAfter: 900_000, now: 1_000)
        #expect(try Self.lease(store, max: 10, now: 1_000).map(Self.owner) == [keys[4]])
        #expect(try store.stats().pendingCascades == 5, "leased jobs are owed until they are done")
        // What the runner does before each lease: due now.
        #expect(try store.write { try store.jobs.pullIn(queue: CascadeQueue.name, runAtAfter: 11_000, now: 1_000) } == 1)
        #expect(try Self.lease(store, max: 10, now: 1_000).map(Self.owner) == [keys[2]])
        let again = try Self.lease(store, max: 10, now: 1_500)
        #expect(try again.map(Self.owner) == Array(keys.prefix(2)) && again.allSatisfy { $0.attempts == 2 })
    }

    /// An items.db as a build before the job queue left it (schema 4), with these outbox rows:
    /// owner, attached keys, created_at_ms, attempts, next_attempt_at_ms.
    static func writeSchema4(_ path: String, outbox: [(String, String, Int64, Int64, Int64)]) throws {
        let db = try Database(path: path)
        _ = try Migrator(Array(ItemStore.migrator.migrations.prefix(4))).migrate(db)
        #expect(try db.userVersion == 4)
        for (owner, attached, created, attempts, next) in outbox {
            try db.execute(
                "INSERT INTO cascade_outbox (owner_key, created_at_ms, attempts, last_error, next_attempt_at_ms, attached_keys) VALUES (?, ?, ?, 'boom', ?, ?)",
                [.text(owner), .integer(created), .integer(attempts), .integer(next), .text(attached)])
        }
        try db.execute(
            "INSERT INTO items (key, name, serial_number, value_in_dollars, created_at_ms, updated_at_ms, version, position) VALUES ('kept', 'Kept', '', 0, 1, 1, 1, 0)")
        try db.close()
    }

    @Test func cascadesOwedInTheOutboxOfSchema4BecomeCascadeJobsOnceAndTheOutboxGoes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let (a, b, c) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        try Self.writeSchema4(path, outbox: [("owner-a", "\(a) \(b)", 10, 0, 0), ("owner-b", "", 20, 3, 5_000), ("owner-c", c, 30, 1, 25)])

        for _ in 0..<2 {
            let store = try ItemStore(path: path)
            #expect(try store.db.userVersion == ItemStore.schemaVersion && ItemStore.schemaVersion == 8)
            #expect(try store.db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'cascade_outbox'")?.int64Value == 0)
            #expect(try store.stats().pendingCascades == 3 && store.stats().itemCount == 1)
            let owed = try owedCascades(store)
            #expect(owed.map(\.ownerKey) == ["owner-a", "owner-b", "owner-c"])
            #expect(owed.map(\.attachedKeys) == [[a, b], [], [c]] && owed.allSatisfy(\.ownerDeleted))
            var list = ListJobsRequest()
            list.queue = CascadeQueue.name
            list.state = .queued
            let jobs = try store.jobs.list(list).jobs.reversed()
            #expect(jobs.map(\.dedupeKey) == ["owner:owner-a", "owner:owner-b", "owner:owner-c"])
            // Due when their row was (or when it was written, for a row never tried).
            #expect(jobs.map(\.runAtMs) == [10, 5_000, 30] && jobs.allSatisfy { $0.maxAttempts == .max })
            try store.close()
        }
    }
}
