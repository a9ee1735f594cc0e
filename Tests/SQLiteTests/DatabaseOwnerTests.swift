import Dispatch
import Foundation
import SQLite
import Locking
import Testing

/// A store of one table, whose writes go through `WriteTransactions` as the services' stores do.
private final class NumberStore: WriteTransactionsStore {
    let db: Database
    let transactions: WriteTransactions

    init(path: String, readOnly: Bool = false, journal: String = "WAL", synchronous: String = "FULL") throws {
        db = try Database(path: path, mode: readOnly ? .readOnly : .readWrite(create: true))
        transactions = WriteTransactions(db)
        if !readOnly {
            try db.execute("PRAGMA journal_mode=\(journal)")
            try db.execute("PRAGMA synchronous=\(synchronous)")
            try db.execute("CREATE TABLE IF NOT EXISTS numbers (value INTEGER PRIMARY KEY)")
        }
    }

    func add(_ value: Int64) throws {
        try transactions.write { try db.execute("INSERT INTO numbers (value) VALUES (?)", [.integer(value)]) }
    }

    func all() throws -> [Int64] {
        try db.query("SELECT value FROM numbers ORDER BY value").compactMap { $0[0].int64Value }
    }

    func close() throws { try db.close() }
}

private struct Closed: Error {}

/// A `NumberStore` whose batch commits fail as a COMMIT whose fsync failed does, when asked.
private final class FailingCommitStore: WriteTransactionsStore {
    let numbers: NumberStore
    let failCommits = Locked(false)
    var db: Database { numbers.db }
    var transactions: WriteTransactions { numbers.transactions }

    init(path: String) throws {
        numbers = try NumberStore(path: path)
    }

    func commitBatch() throws {
        if failCommits.withLock({ $0 }) {
            try? db.execute("ROLLBACK")
            throw CommitOutcomeUnknown(reason: "fdatasync failed: Input/output error (errno 5)")
        }
        try transactions.commitBatch()
    }

    func close() throws { try numbers.close() }
}

@Suite("DatabaseOwner")
struct DatabaseOwnerTests {
    /// An owner of a `NumberStore` at `path`, started.
    private static func started(_ path: String, journal: String = "WAL", synchronous: String = "FULL") throws -> DatabaseOwner<NumberStore> {
        let owner = DatabaseOwner(name: "numbers", closedError: Closed()) { try NumberStore(path: path, journal: journal, synchronous: synchronous) }
        try owner.start()
        return owner
    }

    /// Holds the owner's thread until `release` is signalled, and returns once it is held.
    private static func hold(_ owner: DatabaseOwner<NumberStore>, until release: DispatchSemaphore, durable: Bool = true) {
        let holding = DispatchSemaphore(value: 0)
        owner.submit(durable: durable, { _ in
            holding.signal()
            release.wait()
        }) { _ in }
        holding.wait()
    }

    /// Submits `body` for each job, with its durability, while the owner is held (by a job of
    /// `holdDurable`), so they queue up together; returns once every one has been answered, with
    /// what it answered and how many log syncs the owner had made when it did.
    private static func submitTogether<T: Sendable>(
        _ owner: DatabaseOwner<NumberStore>, _ jobs: [(value: Int64, durable: Bool)], holdDurable: Bool = true,
        _ body: @escaping @Sendable (NumberStore, Int64) throws -> T
    ) -> [Int64: (result: Result<T, any Error>, syncs: Int)] {
        let release = DispatchSemaphore(value: 0), answered = DispatchGroup()
        let results = Locked<[Int64: (result: Result<T, any Error>, syncs: Int)]>([:])
        hold(owner, until: release, durable: holdDurable)
        for job in jobs {
            answered.enter()
            owner.submit(durable: job.durable, { try body($0, job.value) }) { result in
                results.withLock { $0[job.value] = (result, owner.logSyncs ?? 0) }
                answered.leave()
            }
        }
        release.signal()
        answered.wait()
        return results.withLock { $0 }
    }

    @Test("jobs that queue up together share one commit, and a failing one undoes only itself")
    func groupCommit() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = try Self.started(path)
        defer { owner.close() }
        try owner.performHere { try $0.add(2) }
        let before = try owner.performHere { $0.db.commitCount }
        // 2 is there already: its insert fails, in its own savepoint.
        let results = Self.submitTogether(owner, [1, 2, 3, 4].map { ($0, true) }) { try $0.add($1) }.mapValues(\.result)
        #expect(try owner.performHere { $0.db.commitCount } - before == 1)
        #expect((try? results[1]?.get()) != nil && (try? results[3]?.get()) != nil && (try? results[4]?.get()) != nil)
        #expect((try? results[2]?.get()) == nil)
        #expect(try owner.performHere { try $0.all() } == [1, 2, 3, 4])
    }

    /// ``submitTogether(_:_:holdDurable:_:)`` of inserts, held by a job that need not be durable
    /// (the syncs counted are the jobs' own): what each saw of SQLite's synchronous setting (2
    /// FULL: the commit waits for its fsync; 1 NORMAL; 0 OFF) and the syncs made when it heard back.
    private static func submitDurability(
        _ owner: DatabaseOwner<NumberStore>, _ jobs: [(value: Int64, durable: Bool)]
    ) -> [Int64: (synchronous: Int64, syncsWhenAnswered: Int)] {
        submitTogether(owner, jobs, holdDurable: false) { store, value in
            try store.add(value)
            return try store.db.scalar("PRAGMA synchronous")!.int64Value!
        }.mapValues { ((try? $0.result.get()) ?? -1, $0.syncs) }
    }

    @Test("without a write-ahead log a write that need not be durable skips its fsync, unless a durable job shares its batch")
    func durabilityWithoutALog() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = try Self.started(path, journal: "DELETE")
        defer { owner.close() }
        #expect(owner.logSyncs == nil)
        func synchronous(_ jobs: [(value: Int64, durable: Bool)]) -> [Int64: Int64] {
            Self.submitDurability(owner, jobs).mapValues(\.synchronous)
        }
        #expect(synchronous([(1, false)]) == [1: 1])
        #expect(synchronous([(2, true)]) == [2: 2])
        #expect(synchronous([(3, false), (4, false)]) == [3: 1, 4: 1])
        // With a durable job among them, the others go first in a batch of their own, without
        // the fsync; the durable one commits after them with its own.
        #expect(synchronous([(5, false), (6, true), (7, false)]) == [5: 1, 6: 2, 7: 1])
        #expect(try owner.performHere { try $0.all() } == Array(1...7))
    }

    @Test("in WAL mode a batch with more jobs behind it commits without the fsync, and its durable callers hear back after the syncer's")
    func durabilityWithALogSyncer() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = try Self.started(path)
        #expect(owner.logSyncs == 0)
        // A write that need not be durable: no fsync at all.
        let relaxed = Self.submitDurability(owner, [(1, false), (2, false)])
        #expect(relaxed.mapValues(\.synchronous) == [1: 1, 2: 1] && owner.logSyncs == 0)
        // A durable batch with nothing behind it: SQLite syncs in its commit, as with no syncer.
        // The one that need not be durable goes first, on its own (more behind it: NORMAL).
        let alone = Self.submitDurability(owner, [(3, true), (4, false), (5, true)])
        #expect(alone.mapValues(\.synchronous) == [3: 2, 4: 1, 5: 2] && owner.logSyncs == 0)
        // 200 at once: batches of 64 with more behind them commit at NORMAL and are answered
        // after the syncer's sync; the last 8, alone, at FULL.
        let many = Self.submitDurability(owner, (Int64(100)..<300).map { ($0, true) })
        let deferred = many.filter { $0.value.synchronous == 1 }, inCommit = many.filter { $0.value.synchronous == 2 }
        #expect(deferred.count == 192 && inCommit.count == 8, "\(deferred.count) deferred, \(inCommit.count) synced in their commit")
        #expect(deferred.values.allSatisfy { $0.syncsWhenAnswered >= 1 }, "a deferred caller heard back before any sync")
        #expect((1...3).contains(owner.logSyncs ?? 0), "\(owner.logSyncs ?? 0) syncs for 3 deferred batches")
        // A job that changed no row (a read through the writer's owner) waits for no fsync.
        let syncsBeforeRead = owner.logSyncs
        let viaOwner = DispatchSemaphore(value: 0)
        owner.submit({ try $0.all() }) { _ in viaOwner.signal() }
        viaOwner.wait()
        #expect(owner.logSyncs == syncsBeforeRead)
        owner.close()
        // Everything is there after the owner closed, from a new connection.
        let reopened = try NumberStore(path: path)
        defer { try? reopened.close() }
        #expect(try reopened.all() == Array(1...5) + Array(100..<300))
    }

    @Test("jobs that need not wait for the disk run ahead of the durable ones that queued with them, in a transaction of their own")
    func quickJobsFirst() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = try Self.started(path)
        defer { owner.close() }
        let before = try owner.performHere { $0.db.commitCount }
        // Each job inserts its number and says what the table held then.
        let answers = Self.submitTogether(owner, [(1, true), (2, false), (3, true), (4, false), (5, true)], holdDurable: false) {
            (store: NumberStore, value: Int64) throws -> [Int64] in
            try store.add(value)
            return try store.all()
        }
        let seen: [Int64: [Int64]] = answers.mapValues { (try? $0.result.get()) ?? [] }
        // 2 and 4 ran first, in their order; then 1, 3 and 5 in theirs: two commits.
        #expect(seen == [2: [2], 4: [2, 4], 1: [1, 2, 4], 3: [1, 2, 3, 4], 5: [1, 2, 3, 4, 5]])
        #expect(try owner.performHere { $0.db.commitCount } - before == 2)
    }

    @Test("a store that turned syncing off keeps it off, whatever its jobs ask, and gets no log syncer")
    func durabilityOfAStoreThatDoesNotSync() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = try Self.started(path, synchronous: "OFF")
        defer { owner.close() }
        #expect(owner.logSyncs == nil)
        #expect(Self.submitDurability(owner, [(1, false)]).mapValues(\.synchronous) == [1: 0])
        #expect(Self.submitDurability(owner, [(2, true), (3, false)]).mapValues(\.synchronous) == [2: 0, 3: 0])
        #expect(Self.submitDurability(owner, (Int64(10)..<100).map { ($0, true) }).values.allSatisfy { $0.synchronous == 0 })
    }

    @Test("an owner without group commit runs each job alone: a commit each")
    func eachAlone() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = DatabaseOwner(name: "numbers", closedError: Closed(), groupCommit: false) {
            try NumberStore(path: path)
        }
        try owner.start()
        defer { owner.close() }
        let before = try owner.performHere { $0.db.commitCount }
        let results = Self.submitTogether(owner, [1, 2, 3].map { ($0, true) }) { try $0.add($1) }.mapValues(\.result)
        #expect(results.values.allSatisfy { (try? $0.get()) != nil })
        #expect(try owner.performHere { $0.db.commitCount } - before == 3)
    }

    @Test("performHere runs on the calling thread once the batch in progress has finished")
    func performHereWaitsForTheBatchInProgress() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = try Self.started(path)
        defer { owner.close() }
        let release = DispatchSemaphore(value: 0)
        let inJob = DispatchSemaphore(value: 0)
        owner.submit({ store in
            inJob.signal()
            release.wait()
            try store.add(7)
        }) { _ in }
        inJob.wait()
        let seen = Locked<[Int64]?>(nil)
        let caller = Thread {
            let values = try? owner.performHere { try $0.all() }
            seen.withLock { $0 = values }
        }
        caller.start()
        // The caller waits for the job holding the store; had it not waited, it would have read
        // the table before the job's row.
        let end = ContinuousClock.now + .seconds(10)
        while owner.waitingForTheStore == 0 && seen.withLock({ $0 }) == nil && ContinuousClock.now < end { usleep(1000) }
        #expect(owner.waitingForTheStore == 1)
        #expect(seen.withLock { $0 } == nil)
        release.signal()
        while seen.withLock({ $0 }) == nil { usleep(1000) }
        #expect(seen.withLock { $0 } == [7])
        let thread = try owner.performHere { _ in Thread.current }
        #expect(thread == Thread.current)
    }

    @Test("before start and once closed, every way in answers the closed error; close joins the thread and closes the store")
    func closedBeforeStartAndAfterClose() async throws {
        let folder = try TemporaryDirectory()
        let path = folder.path("n.db")
        let owner = DatabaseOwner(name: "numbers", closedError: Closed()) { try NumberStore(path: path) }
        #expect(throws: Closed.self) { try owner.performHere { _ in 1 } }
        #expect(!FileManager.default.fileExists(atPath: path), "nothing is opened before start()")
        try owner.start()
        try await owner.perform { try $0.add(1) }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        owner.close()
        // The last connection to close checkpoints the WAL and removes it.
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the store was closed")
        #expect(throws: Closed.self) { try owner.performHere { _ in 1 } }
        let refused = Locked<Bool>(false)
        owner.submit({ _ in 1 }) { result in
            if case .failure(let error) = result { refused.withLock { $0 = error is Closed } }
        }
        #expect(refused.withLock { $0 })
        owner.close()
    }

    @Test("a commit whose outcome is unknown faults the owner: its callers hear so, every later job is refused without running, onFault hears once")
    func aCommitWhoseOutcomeIsUnknownFaultsTheOwner() async throws {
        let folder = try TemporaryDirectory()
        let faults = Locked<[String]>([])
        let path = folder.path("n.db")
        let owner = DatabaseOwner(name: "numbers", closedError: Closed(), onFault: { reason in faults.withLock { $0.append(reason) } }) {
            try FailingCommitStore(path: path)
        }
        try owner.start()
        defer { owner.close() }
        try await owner.perform { try $0.numbers.add(1) }
        // A batch of three whose commit fails that way.
        try owner.performHere { $0.failCommits.withLock { $0 = true } }
        let release = DispatchSemaphore(value: 0), answered = DispatchGroup()
        let results = Locked<[Int64: any Error]>([:])
        let holding = DispatchSemaphore(value: 0)
        owner.submit({ _ in holding.signal(); release.wait() }) { _ in }
        holding.wait()
        for value in Int64(2)...4 {
            answered.enter()
            owner.submit({ try $0.numbers.add(value) }) { result in
                if case .failure(let error) = result { results.withLock { $0[value] = error } }
                answered.leave()
            }
        }
        release.signal()
        answered.wait()
        #expect(results.withLock { $0.values.allSatisfy { $0 is CommitOutcomeUnknown } && $0.count == 3 })
        #expect(faults.withLock { $0 } == ["fdatasync failed: Input/output error (errno 5)"])
        #expect(owner.faultReason == "fdatasync failed: Input/output error (errno 5)")
        // Nothing runs from now on: refused, not run (the body would record it).
        let ran = Locked(false)
        do {
            try await owner.perform { _ in ran.withLock { $0 = true } }
            Issue.record("a job ran on a faulted owner")
        } catch {
            #expect(error is StorageFaulted, "\(error)")
        }
        #expect(!ran.withLock { $0 })
        owner.fault("a second fault")
        #expect(faults.withLock { $0.count } == 1)
    }

    @Test("a job alone whose COMMIT fails with an I/O error faults the owner too; a full disk only refuses, as DiskFull")
    func anIOErrorAtASingleCommitFaultsAndAFullDiskDoesNot() async throws {
        let folder = try TemporaryDirectory()
        let faults = Locked(0)
        let path = folder.path("n.db")
        let owner = DatabaseOwner(name: "numbers", closedError: Closed(), onFault: { _ in faults.withLock { $0 += 1 } }) {
            try NumberStore(path: path)
        }
        try owner.start()
        defer { owner.close() }
        do {
            try await owner.perform { _ in throw SQLiteError(extendedCode: 13, message: "database or disk is full", sql: "COMMIT") }
            Issue.record("no error")
        } catch {
            #expect(error is DiskFull, "\(error)")
        }
        try await owner.perform { try $0.add(1) }
        #expect(faults.withLock { $0 } == 0)
        do {
            try await owner.perform { _ in throw CommitOutcomeUnknown(reason: "SQLite error 1034 (disk I/O error)") }
            Issue.record("no error")
        } catch {
            #expect(error is CommitOutcomeUnknown, "\(error)")
        }
        #expect(faults.withLock { $0 } == 1)
        #expect(owner.faultReason == "SQLite error 1034 (disk I/O error)")
    }
}
