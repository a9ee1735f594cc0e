import Foundation
@testable import JobQueue
import Proto
import SQLite
import Testing

/// Batches, stats and listing, pruning and trimming past retention, and the schema and its indexes.
extension JobStoreTests {
    @Test func batchCountersFollowTheirJobsAndAPendingJobJoinsOnlyWhenInNoBatch() throws {
        defer { folder.remove() }
        let other = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 0) }
        try host.enqueue(key: "in-other", batch: other, now: 0)
        try host.enqueue(key: "loose", now: 0)
        let batch = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 1000) }
        var get = GetBatchRequest()
        get.queue = "thumbnails"
        get.batchId = batch
        #expect(try host.jobs.batch(get, now: 1000).finishedAtMs == 1000)  // empty: finished

        #expect(try host.enqueue(key: "new", batch: batch, now: 1000).inBatch)
        let loose = try host.enqueue(key: "loose", batch: batch, now: 1000)
        #expect(!loose.created && loose.inBatch && loose.job.batchId == batch)
        let elsewhere = try host.enqueue(key: "in-other", batch: batch, now: 1000)
        #expect(!elsewhere.created && !elsewhere.inBatch && elsewhere.job.batchId == other)
        var progress = try host.jobs.batch(get, now: 1000)
        #expect(progress.total == 2 && progress.pending == 2 && progress.finishedAtMs == 0)

        let leased = try host.lease(max: 3, now: 2000).jobs.filter { $0.batchId == batch }
        #expect(leased.count == 2)
        try host.complete(leased[0], now: 3000)
        progress = try host.jobs.batch(get, now: 3000)
        #expect(progress.done == 1 && progress.pending == 1 && progress.ratePerSecond == 0.5)
        try host.fail(leased[1], permanent: true, now: 5000)
        progress = try host.jobs.batch(get, now: 9000)
        #expect(progress.done == 1 && progress.dead == 1 && progress.pending == 0 && progress.finishedAtMs == 5000)
        #expect(progress.ratePerSecond == 0.5)

        get.batchId = "99"
        #expect(jobError { try host.jobs.batch(get, now: 0) } == .notFound("queue thumbnails has no batch 99"))
    }

    @Test func doneJobsPastRetentionArePrunedInBoundedChunks() throws {
        defer { folder.remove() }
        let day: Int64 = 24 * 3600 * 1000
        try host.write {
            for index in 0..<2600 {
                _ = try host.jobs.enqueue(queue: "thumbnails", payload: [], now: 0)
                var request = LeaseRequest()
                request.queue = "thumbnails"
                let leased = try host.jobs.lease(request, now: 0).jobs[0]
                _ = try host.jobs.complete(completeRequest(leased), now: index < 2500 ? 1000 : day + 1000)
            }
        }
        let commits = host.db.commitCount
        var chunks: [Int] = []
        var pruned = 1000
        while pruned == 1000 {
            pruned = try host.write { try host.jobs.prune(queue: "thumbnails", now: day + 2000, limit: 1000).done }
            chunks.append(pruned)
        }
        #expect(chunks == [1000, 1000, 500])
        #expect(host.db.commitCount - commits == 3)
        #expect(try host.stats(now: day + 2000).done == 100 && host.count("jobs") == 100)
    }

    @Test func deadJobsWithTheirErrorsAndFinishedBatchesArePrunedPastTheirRetention() throws {
        defer { folder.remove() }
        let hour: Int64 = 3600 * 1000
        let queue = JobQueueConfiguration(
            name: "thumbnails", retention: JobRetention(doneMilliseconds: hour, deadMilliseconds: 2 * hour, batchMilliseconds: 3 * hour))
        let host = try TestHost(path: folder.path + "/retention.db", queues: [queue])
        defer { try? host.close() }
        let batch = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 0) }
        try host.enqueue("dies", key: "a", batch: batch, now: 0)
        try host.fail(try host.lease(now: 0).jobs[0], permanent: true, now: 10)
        // A job still pending keeps its batch however old.
        let open = try host.write { try host.jobs.createBatch(queue: "thumbnails", now: 0) }
        try host.enqueue("waits", key: "b", batch: open, now: 0)
        func prune(at now: Int64) throws -> JobStore.Pruned {
            try host.write { try host.jobs.prune(queue: "thumbnails", now: now, limit: 1000) }
        }
        #expect(try prune(at: 2 * hour) == JobStore.Pruned())
        #expect(try prune(at: 2 * hour + 11) == JobStore.Pruned(done: 0, dead: 1, batches: 0))
        #expect(try host.count("job_errors") == 0 && host.count("jobs") == 1)
        #expect(try prune(at: 3 * hour + 11) == JobStore.Pruned(done: 0, dead: 0, batches: 1))
        var get = GetBatchRequest()
        get.queue = "thumbnails"
        get.batchId = batch
        #expect(jobError { try host.jobs.batch(get, now: 0) } == .notFound("queue thumbnails has no batch \(batch)"))
        get.batchId = open
        #expect(try host.jobs.batch(get, now: 0).pending == 1)
        // Kept for good: nothing goes, however old.
        let forever = JobRetention(doneMilliseconds: JobRetention.keep, deadMilliseconds: JobRetention.keep, batchMilliseconds: JobRetention.keep)
        let keeper = try TestHost(path: folder.path + "/keep.db", queues: [JobQueueConfiguration(name: "thumbnails", retention: forever)])
        defer { try? keeper.close() }
        try keeper.fail(try { try keeper.enqueue(now: 0); return try keeper.lease(now: 0).jobs[0] }(), permanent: true, now: 0)
        #expect(try keeper.write { try keeper.jobs.prune(queue: "thumbnails", now: .max / 2, limit: 10) } == JobStore.Pruned())
    }

    @Test func aFinishedJobsPayloadIsTrimmedAndATrimmedDeadJobIsNotRevived() throws {
        defer { folder.remove() }
        // Drops all but the first byte, as the capture queue drops a capture's inline bytes.
        let trimming = JobQueueConfiguration(name: "thumbnails", trimFinishedPayload: { $0.count > 1 ? Array($0.prefix(1)) : nil })
        let host = try TestHost(path: folder.path + "/trim.db", queues: [trimming])
        defer { try? host.close() }
        try host.enqueue("done: 8 MiB inline", now: 0)
        try host.complete(try host.lease(now: 0).jobs[0], now: 1)
        try host.enqueue("dead: 8 MiB inline", now: 0)
        try host.fail(try host.lease(now: 0).jobs[0], permanent: true, now: 1)
        try host.enqueue("x", now: 0)
        try host.fail(try host.lease(now: 0).jobs[0], permanent: true, now: 1)
        #expect(try ["1", "2", "3"].map { String(decoding: try host.get($0).payload, as: UTF8.self) } == ["d", "d", "x"])
        var retry = RetryDeadRequest()
        retry.queue = "thumbnails"
        retry.all = true
        // The job whose payload lost bytes would run without them: it stays DEAD.
        #expect(try host.write { try host.jobs.retryDead(retry, now: 2) }.requeued == 1)
        #expect(try host.get("2").state == .dead && host.get("3").state == .queued)
    }

    @Test func statsCountEveryStateAndTheOldestReadyAge() throws {
        defer { folder.remove() }
        for _ in 0..<4 { try host.enqueue(now: 1000) }
        try host.enqueue(runAt: 60_000, now: 1000)  // scheduled
        let leased = try host.lease(max: 3, now: 2000).jobs
        try host.complete(leased[0], now: 2500)
        try host.fail(leased[1], permanent: true, now: 2500)
        let stats = try host.stats(now: 5000)
        #expect(stats.ready == 1 && stats.scheduled == 1 && stats.leased == 1 && stats.done == 1 && stats.dead == 1)
        #expect(stats.oldestReadyAgeMs == 4000 && !stats.paused && stats.doneRetentionMs == 24 * 3600 * 1000)
        #expect(stats.deadRetentionMs == 7 * 24 * 3600 * 1000 && stats.batchRetentionMs == 7 * 24 * 3600 * 1000)
    }

    @Test func listJobsPagesNewestFirstAndPurgeTakesOnlyTheListedJobsOfItsState() throws {
        defer { folder.remove() }
        for _ in 0..<5 { try host.enqueue(now: 0) }
        for job in try host.lease(max: 5, now: 0).jobs { try host.fail(job, permanent: true, now: 1) }
        var list = ListJobsRequest()
        list.queue = "thumbnails"
        list.pageSize = 2
        var pages: [[String]] = []
        repeat {
            let page = try host.jobs.list(list)
            pages.append(page.jobs.map(\.jobId))
            #expect(page.jobs.allSatisfy { $0.errors.count == 1 })
            list.pageToken = page.nextPageToken
        } while !list.pageToken.isEmpty
        #expect(pages == [["5", "4"], ["3", "2"], ["1"]])
        list.pageToken = "zz"
        #expect(jobError { try host.jobs.list(list) }?.rpcStatus == .invalidArgument)

        var purge = PurgeJobsRequest()
        purge.queue = "thumbnails"
        purge.jobIds = ["2", "4"]
        #expect(try host.write { try host.jobs.purge(purge) }.purged == 2)
        purge.state = .done
        purge.jobIds = ["1"]
        #expect(try host.write { try host.jobs.purge(purge) }.purged == 0)
        #expect(try host.stats(now: 2).dead == 3 && host.count("job_errors") == 3)
    }

    @Test func migrateIsRepeatableAndLeavesTheHostsSchemaAlone() throws {
        defer { folder.remove() }
        try host.db.setUserVersion(7)
        try host.enqueue(now: 0)
        try JobStore.migrate(host.db)
        #expect(try host.db.userVersion == 7 && host.count("jobs") == 1 && host.count("things") == 0)
        #expect(try host.db.scalar("SELECT version FROM job_queue_schema")?.int64Value == Int64(JobStore.schemaVersion))
    }

    @Test func listJobsOfEveryStateWalksAnIndexNewestFirstWithoutSortingTheState() throws {
        defer { folder.remove() }
        for state in JobState.allCases.dropFirst() {
            let plan = try host.db.query(
                "EXPLAIN QUERY PLAN " + JobStore.listQuery(state: state), [.text("thumbnails"), .integer(Int64.max), .integer(101)]
            ).map { $0["detail"]?.stringValue ?? "" }
            // A temporary B-tree would sort every job of the state, a million DONE ones, per page.
            #expect(plan.count == 1 && plan[0].contains("USING INDEX") && !plan.contains { $0.contains("TEMP B-TREE") },
                "\(state): \(plan)")
        }
    }
}
