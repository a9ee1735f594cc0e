import Foundation
@testable import JobQueue
import Proto
import SQLite
import Locking
import TestSupport

/// A fresh temporary folder, removed by `remove()`.
struct TemporaryFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("hp-jobs-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// An ipc endpoint inside the folder.
    func endpoint(_ name: String) -> String { "ipc://\(path)/\(name).sock" }
}

/// A host's store as a service has one: its own table (`things`) and the job tables in one
/// SQLite file, its writes through `WriteTransactions`.
final class TestHost: JobStoreHost, WriteTransactionsStore {
    let db: Database
    let jobs: JobStore
    let transactions: WriteTransactions

    init(path: String, queues: [JobQueueConfiguration] = [testQueue], random: any RandomNumberGenerator = SplitMix64(seed: 7)) throws {
        db = try Database(path: path)
        try db.execute("PRAGMA journal_mode=WAL")
        // No fsync: these tests are about the queue's logic and its leases' timing, and in a full
        // run other tests' writeback made each fsync here wait seconds (ext4 commits their
        // dirty data with it), so heartbeats missed 6 s leases. A killed process loses nothing
        // without fsync either; the durable commits are exercised in images.db and items.db.
        try db.execute("PRAGMA synchronous=OFF")
        try db.execute("CREATE TABLE IF NOT EXISTS things (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        try JobStore.migrate(db)
        transactions = WriteTransactions(db)
        jobs = try JobStore(db: db, queues: queues, random: random)
    }

    func close() throws { try db.close() }

    /// Stores a thing (the host's own row) and returns its id.
    func insertThing(_ name: String) throws -> Int64 {
        try db.execute("INSERT INTO things (name) VALUES (?)", [.text(name)])
        return db.lastInsertRowID
    }

    func count(_ table: String) throws -> Int64 { try db.scalar("SELECT count(*) FROM \(table)")!.int64Value! }
}

/// The queue the tests serve.
let testQueue = JobQueueConfiguration(name: "thumbnails")

/// Gives the same values over and over: a lease draws two (its id), a failure's jitter one.
struct CyclingGenerator: RandomNumberGenerator {
    let values: [UInt64]
    var position = 0
    mutating func next() -> UInt64 {
        defer { position = (position + 1) % values.count }
        return values[position]
    }
}

/// The JobStoreError a store call threw, or nil.
func jobError<T>(_ body: () throws -> T) -> JobStoreError? {
    do {
        _ = try body()
        return nil
    } catch let error as JobStoreError {
        return error
    } catch {
        return .invalidArgument("not a JobStoreError: \(error)")
    }
}

extension TestHost {
    @discardableResult
    func enqueue(_ payload: String = "p", key: String? = nil, batch: String? = nil, runAt: Int64? = nil, now: Int64) throws -> JobStore.Enqueued {
        try write { try jobs.enqueue(queue: "thumbnails", payload: Array(payload.utf8), dedupeKey: key, batchID: batch, runAtMs: runAt, now: now) }
    }

    func lease(worker: String = "w1", max: Int32 = 1, leaseMs: Int32 = 0, now: Int64) throws -> JobStore.Leased {
        var request = LeaseRequest()
        request.queue = "thumbnails"
        request.workerId = worker
        request.maxJobs = max
        request.leaseMs = leaseMs
        return try write { try jobs.lease(request, now: now) }
    }

    @discardableResult
    func complete(_ job: Job, result: String = "r", now: Int64, effect: (Job, [UInt8]) throws -> [UInt8] = { $1 }) throws -> JobStore.Completed {
        try write { try jobs.complete(completeRequest(job, result: result), now: now, effect: effect) }
    }

    @discardableResult
    func fail(
        _ job: Job, error: String = "boom", permanent: Bool = false, retryAfterMs: Int32 = 0, giveBack: Bool = false, now: Int64
    ) throws -> Job {
        var request = FailRequest()
        request.queue = job.queue
        request.jobId = job.jobId
        request.leaseId = job.leaseId
        request.error = error
        request.permanent = permanent
        request.retryAfterMs = retryAfterMs
        request.giveBack = giveBack
        return try write { try jobs.fail(request, now: now) }
    }

    func get(_ jobID: String) throws -> Job {
        var request = GetJobRequest()
        request.queue = "thumbnails"
        request.jobId = jobID
        return try jobs.job(request)
    }

    func stats(now: Int64) throws -> JobStatsResponse {
        var request = JobStatsRequest()
        request.queue = "thumbnails"
        return try jobs.stats(request, now: now)
    }
}

func completeRequest(_ job: Job, result: String = "r") -> CompleteRequest {
    var request = CompleteRequest()
    request.queue = job.queue
    request.jobId = job.jobId
    request.leaseId = job.leaseId
    request.result = Array(result.utf8)
    return request
}

/// What closures recorded, in order.
final class Recorded<T: Sendable>: Sendable {
    private let values = Locked<[T]>([])
    func append(_ value: T) { values.withLock { $0.append(value) } }
    var all: [T] { values.withLock { $0 } }
}

/// A counter closures can bump.
final class Counter: Sendable {
    private let value = Locked(0)
    func bump() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
