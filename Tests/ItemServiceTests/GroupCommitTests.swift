import Foundation
import Proto
import SQLite
import Locking
import Testing

@testable import ItemService

/// Concurrent writes share one commit; a failing job in a batch undoes only itself; when SQLite
/// undoes the whole batch, every caller still hears what became of its own write.
@Suite struct GroupCommitTests {
    @Test func jobsQueuedTogetherShareOneCommit() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let queue = ItemStoreQueue(path: path)
        try queue.start()
        let before = try Self.run(on: queue) { $0.db.commitCount }
        // Hold the store's thread so that the creates queue up behind it (no task involved:
        // the callbacks run on the store's thread).
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        queue.submit({ _ in
            holding.signal()
            release.wait()
        }) { _ in }
        holding.wait()
        let done = DispatchSemaphore(value: 0)
        let keys = Locked<[String]>([])
        for index in 0..<20 {
            queue.submit({ try $0.create(createRequest("Item \(index)"), now: 1).item.key }) { result in
                if case .success(let key) = result { keys.withLock { $0.append(key) } }
                done.signal()
            }
        }
        release.signal()
        for _ in 0..<20 { done.wait() }
        let after = try Self.run(on: queue) { $0.db.commitCount }
        queue.close()
        #expect(keys.withLock { $0.count } == 20)
        #expect(after - before == 1, "20 creates queued together took \(after - before) commits")
        let store = try ItemStore(path: path)
        #expect(Set(try allItems(store).map(\.key)) == Set(keys.withLock { $0 }))
    }

    /// `body` on the store's thread, waited for on this one.
    static func run<T: Sendable>(on queue: ItemStoreQueue, _ body: @escaping @Sendable (ItemStore) throws -> T) throws -> T {
        let finished = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<T, any Error>?>(nil)
        queue.submit(body) { result in
            outcome.withLock { $0 = result }
            finished.signal()
        }
        finished.wait()
        return try outcome.withLock { $0! }.get()
    }

    @Test func aJobThatMakesSQLiteRollBackTheWholeBatchLeavesEachCallerWithWhatIsDurable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        try store.db.execute("CREATE TABLE filler (data BLOB)")
        // Room for small writes only: the big one fails with SQLITE_FULL, and SQLite then rolls
        // back the whole transaction, not just the statement (sqlite3_get_autocommit turns true).
        let pages = try #require(try store.db.scalar("PRAGMA page_count")?.int64Value)
        try store.db.execute("PRAGMA max_page_count = \(pages + 8)")

        let outcomes = Locked<[String: Result<String, any Error>]>([:])
        func create(_ name: String) -> ItemStoreQueue.Job {
            ItemStoreQueue.job({ try $0.create(createRequest(name), now: 1).item.key }) { result in
                outcomes.withLock { $0[name] = result }
            }
        }
        let tooBig = ItemStoreQueue.job({ store in
            try store.write { try store.db.execute("INSERT INTO filler VALUES (zeroblob(1048576))") }
        }) { result in outcomes.withLock { $0["too big"] = result.map { "" } } }
        let commitsBefore = store.db.commitCount
        ItemStoreQueue.runBatch([create("Before"), tooBig, create("After 1"), create("After 2")][...], on: store)
        let commits = store.db.commitCount - commitsBefore
        try store.close()

        let reopened = try ItemStore(path: path)
        let durable = Set(try allItems(reopened).map(\.name))
        let reported = outcomes.withLock { $0 }
        for name in ["Before", "After 1", "After 2"] {
            let succeeded = (try? reported[name]?.get()) != nil
            #expect(succeeded == durable.contains(name), "\(name): reported \(String(describing: reported[name])), stored: \(durable.contains(name))")
            #expect(succeeded, "\(name) failed for another job's error: \(String(describing: reported[name]))")
        }
        // SQLITE_FULL, said as a full disk (RESOURCE_EXHAUSTED to a caller).
        guard case .failure(let error as DiskFull)? = reported["too big"] else {
            Issue.record("the write over the page limit answered \(String(describing: reported["too big"]))")
            return
        }
        #expect(error.reason.contains("SQLite error 13"), "\(error)")
        #expect(try reopened.db.scalar("SELECT count(*) FROM filler")?.int64Value == 0)
        #expect(try reopened.stats().itemCount == 3 && reopened.order.count == 3)
        #expect(commits == 3, "the three creates, each alone after the batch was lost")
    }

    /// Every read of the cascade queue on `store`'s connection (the Stats job's counters, the
    /// cascade runner's lease) fails with a real SQLITE_IOERR_READ from inside SQLite, which then
    /// rolls back the open transaction as it does for a disk that fails under a read: temporary
    /// views of those names, which this connection reads instead of the tables, call a function
    /// that fails on each row (one owed cascade is there).
    static func failReadsOfTheQueue(_ store: ItemStore) throws {
        try store.db.createFunction("injected_read_fault") { _ in
            throw SQLiteError(extendedCode: 266, message: "injected: disk I/O error reading the queue", sql: nil)
        }
        _ = try store.delete(key: try store.create(createRequest("Owed"), now: 1).item.key, now: 1)
        try store.db.execute("CREATE TEMP VIEW job_counts AS SELECT * FROM main.job_counts WHERE injected_read_fault()")
        try store.db.execute("CREATE TEMP VIEW jobs AS SELECT * FROM main.jobs WHERE injected_read_fault()")
    }

    /// Jobs that keep their outcome under a name.
    final class Outcomes: Sendable {
        let results = Locked<[String: Result<String, any Error>]>([:])

        func job(_ name: String, _ body: @escaping @Sendable (ItemStore) throws -> String) -> ItemStoreQueue.Job {
            ItemStoreQueue.job(body) { result in self.results.withLock { $0[name] = result } }
        }

        func create(_ name: String) -> ItemStoreQueue.Job {
            job(name) { try $0.create(createRequest(name), now: 1).item.name }
        }

        subscript(name: String) -> Result<String, any Error>? { results.withLock { $0[name] } }
    }

    /// `failure` is an SQLITE_IOERR the store's read hit (extended 266, primary 10).
    static func isTheInjectedReadFault(_ failure: Result<String, any Error>?) -> Bool {
        guard case .failure(let error as SQLiteError)? = failure else { return false }
        return error.extendedCode == 266 && error.primaryCode == 10
    }

    @Test func aReadThatMakesSQLiteRollBackTheBatchTrapsNothingAndEachCallerHearsWhatIsDurable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        let existing = try store.create(createRequest("Existing"), now: 1).item
        try Self.failReadsOfTheQueue(store)
        let outcomes = Outcomes()
        var rename = UpdateItemRequest()
        rename.key = existing.key
        rename.name = "Renamed"
        rename.updateMask = ["name"]
        let commitsBefore = store.db.commitCount
        // Stats fails in the middle of the batch; a write follows it in the same batch (it trapped).
        ItemStoreQueue.runBatch(
            [
                outcomes.create("Before"),
                outcomes.job("stats") { try String($0.stats().itemCount) },
                outcomes.create("After"),
                outcomes.job("rename") { [rename] store in try store.update(rename, now: 2).name },
                outcomes.job("get") { [key = existing.key] store in try store.get(key: key).name },
            ][...], on: store)
        let commits = store.db.commitCount - commitsBefore
        #expect(!store.inBatch && store.db.isAutocommit)
        try store.close()

        #expect(Self.isTheInjectedReadFault(outcomes["stats"]), "\(String(describing: outcomes["stats"]))")
        for name in ["Before", "After", "rename", "get"] {
            #expect((try? outcomes[name]?.get()) != nil, "\(name) failed for another job's error: \(String(describing: outcomes[name]))")
        }
        #expect((try? outcomes["get"]?.get()) == "Renamed", "the read after the rename sees it")
        let reopened = try ItemStore(path: path)
        #expect(Set(try allItems(reopened).map(\.name)) == ["Renamed", "Before", "After"])
        #expect(try reopened.stats().itemCount == 3 && reopened.order.count == 3)
        #expect(commits == 3, "Before again, After and the rename, each alone (got \(commits))")
    }

    @Test func aReadThatMakesSQLiteRollBackTheBatchAsItsLastJobLosesNoEarlierWrite() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        try Self.failReadsOfTheQueue(store)
        let outcomes = Outcomes()
        // The cascade's lease of due jobs, last: nothing after it would notice the lost transaction.
        var lease = LeaseRequest()
        lease.queue = CascadeQueue.name
        ItemStoreQueue.runBatch(
            [
                outcomes.create("First"), outcomes.create("Second"),
                outcomes.job("due") { [lease] store in try String(store.jobs.lease(lease, now: 10).jobs.count) },
            ][...], on: store)
        try store.close()

        #expect(Self.isTheInjectedReadFault(outcomes["due"]), "\(String(describing: outcomes["due"]))")
        for name in ["First", "Second"] {
            #expect((try? outcomes[name]?.get()) == name, "\(name): \(String(describing: outcomes[name]))")
        }
        let reopened = try ItemStore(path: path)
        #expect(Set(try allItems(reopened).map(\.name)) == ["First", "Second"])
    }

    @Test func aWriteAfterAReadWhoseFailureItsJobSwallowedRunsAgainAloneInsteadOfTrapping() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        try Self.failReadsOfTheQueue(store)
        let outcomes = Outcomes()
        let commitsBefore = store.db.commitCount
        // As the photo changes read the version before (`try?`), then write, in one job.
        ItemStoreQueue.runBatch(
            [
                outcomes.create("Before"),
                outcomes.job("Swallowed") { store in
                    _ = try? store.stats()
                    return try store.create(createRequest("Swallowed"), now: 1).item.name
                },
                outcomes.create("After"),
            ][...], on: store)
        let commits = store.db.commitCount - commitsBefore
        try store.close()

        for name in ["Before", "Swallowed", "After"] {
            #expect((try? outcomes[name]?.get()) == name, "\(name): \(String(describing: outcomes[name]))")
        }
        let reopened = try ItemStore(path: path)
        #expect(try allItems(reopened).map(\.name).sorted() == ["After", "Before", "Swallowed"])
        #expect(reopened.order.count == 3)
        #expect(commits == 3, "each alone after the batch was lost (got \(commits))")
    }

    @Test func aFailingJobInABatchLeavesTheOthersCommitted() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let store = try ItemStore(path: path)
        let deleted = UUID().uuidString.lowercased()
        _ = try store.create(createRequest("Gone", key: deleted), now: 1)
        _ = try store.delete(key: deleted, now: 2)

        try store.beginBatch()
        let first = try store.create(createRequest("First"), now: 3).item
        // Fails inside its savepoint: the key belonged to a deleted item.
        #expect(storeError { try store.create(createRequest("Again", key: deleted), now: 3) } != nil)
        let second = try store.create(createRequest("Second"), now: 3).item
        try store.move(from: 1, to: 0)
        try store.commitBatch()
        try store.close()

        let reopened = try ItemStore(path: path)
        #expect(try allItems(reopened).map(\.key) == [second.key, first.key])
    }

    @Test func concurrentCreatesThroughTheQueueAreAllStored() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.path + "/items.db"
        let queue = ItemStoreQueue(path: path)
        try queue.start()
        let keys = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<200 {
                group.addTask {
                    try await queue.perform { try $0.create(createRequest("Item \(index)"), now: 1).item.key }
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        let invalid = await rpcLikeError { try await queue.perform { try $0.create(createRequest(""), now: 1) } }
        #expect(invalid != nil)
        queue.close()
        let store = try ItemStore(path: path)
        #expect(Set(try allItems(store).map(\.key)) == keys && keys.count == 200)
    }

    func rpcLikeError<T>(_ body: () async throws -> T) async -> (any Error)? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }
}
