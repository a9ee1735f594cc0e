import Foundation
import JobQueue
import Proto
import RPC
import Runtime
import SQLite
import Synchronization
import ZMQ

/// `homepwner-bench queue`: no-op jobs through Lease and Complete over RPC (a JobQueue host
/// with group commit in WAL mode: every completion fsynced before it is answered, by the
/// owner's log syncer; leases committed without waiting for the disk), with 1 and several
/// workers, next to the same two transactions per job on a bare SQLite connection (the lease
/// at synchronous=NORMAL, the completion at FULL), in the same run, and ListJobs(DONE) pages
/// read beside 4 workers next to the same page query on the bare connection; then all of it
/// again with 1,000,000 DONE rows in the table.
enum QueueBenchmark {
    typealias Result = ItemsBenchmark.Result
    typealias Owner = DatabaseOwner<BenchJobHost>
    static let queue = JobQueueConfiguration(name: "bench")

    static func run(_ arguments: [String]) async {
        var options: [String: Double] = ["--seconds": 3, "--rounds": 3, "--workers": 4, "--done": 1_000_000, "--max-jobs": 16]
        for (flag, value) in zip(arguments, arguments.dropFirst()) where options[flag] != nil {
            options[flag] = Double(value) ?? options[flag]
        }
        let seconds = options["--seconds"]!, rounds = Int(options["--rounds"]!), workers = Int(options["--workers"]!)
        let doneRows = Int(options["--done"]!), maxJobs = Int32(options["--max-jobs"]!)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hp-bench-queue-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var bench = try Bench(folder: folder)
            // Per table size: bare, 1 worker, `workers` workers, `workers` workers leasing `maxJobs` at once.
            var results: [[Result]] = Array(repeating: [], count: 8)
            // Per table size: the bare page query, ListJobs over RPC, and the workers beside it.
            var listings: [[Result]] = Array(repeating: [], count: 6)
            func measure(from first: Int) async throws {
                for _ in 0..<rounds {
                    try await bench.enqueue(upTo: 60_000)
                    results[first].append(try bench.bare(seconds: seconds))
                    results[first + 1].append(try await bench.workers(1, maxJobs: 1, seconds: seconds))
                    results[first + 2].append(try await bench.workers(workers, maxJobs: 1, seconds: seconds))
                    results[first + 3].append(try await bench.workers(workers, maxJobs: maxJobs, seconds: seconds))
                    let listing = first / 4 * 3
                    listings[listing].append(try bench.bareList(seconds: seconds))
                    let (listed, beside) = try await bench.listBesideWorkers(workers, seconds: seconds)
                    listings[listing + 1].append(listed)
                    listings[listing + 2].append(beside)
                }
            }
            print("lease+complete, \(rounds) interleaved rounds of \(seconds) s…")
            try await measure(from: 0)
            print("filling both tables with \(doneRows) DONE rows…")
            bench = try await bench.fillDone(doneRows)
            try await measure(from: 4)
            bench.stop()
            let medians = results.map(ItemsBenchmark.median)
            func ratio(_ variant: Int, _ baseline: Int) -> String {
                let ratios = zip(results[variant], results[baseline]).map { $0.perSecond / $1.perSecond }.sorted()
                return String(format: "%.2f (%.2f–%.2f)", ratios[ratios.count / 2], ratios.first!, ratios.last!)
            }
            print("""

                | DONE rows | what | jobs/s | Lease p50 µs | Lease p99 µs | ratio to bare (median, min–max of rounds) |
                |---|---|---|---|---|---|
                """)
            let rows = [0, 4].flatMap { first in
                (first..<first + 4).map { ($0 < 4 ? 0 : doneRows, $0, $0 == first ? "1.00" : ratio($0, first)) }
            }
            for (done, index, ratio) in rows {
                let result = medians[index]
                print(String(format: "| %d | %@ | %.0f | %.0f | %.0f | %@ |", done, result.name, result.perSecond,
                    result.percentile(0.5), result.percentile(0.99), ratio))
            }
            print("""

                | DONE rows | what | calls/s | p50 µs | p99 µs |
                |---|---|---|---|---|
                """)
            for (index, result) in listings.map(ItemsBenchmark.median).enumerated() {
                print(String(format: "| %d | %@ | %.0f | %.0f | %.0f |", index < 3 ? 0 : doneRows, result.name, result.perSecond,
                    result.percentile(0.5), result.percentile(0.99)))
            }
        } catch {
            FileHandle.standardError.write(Data("queue benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The two sides: a JobQueue host with its reader and sweeper on an ipc endpoint, and a bare
    /// connection on a file of its own with the same tables.
    final class Bench {
        let folder: String
        let context: Context
        let owner: Owner
        let reader: DatabaseOwner<JobReadConnection>
        let service: JobQueueService<Owner>
        let composition: ServiceComposition
        let bare: Database
        let bareLease: Statement
        let bareComplete: Statement

        init(folder: String) throws {
            self.folder = folder
            context = try Context(ioThreads: 1)
            let path = folder + "/host.db"
            owner = Owner(name: "bench-jobs", closedError: RPCError.unavailable("stopping")) { try BenchJobHost(path: path) }
            let logger = Logger(label: "bench", level: .error)
            reader = DatabaseOwner(jobReaderOf: path, queues: [QueueBenchmark.queue], name: "bench-jobs-reader")
            service = JobQueueService(
                owner: owner, reader: reader, queues: [QueueBenchmark.queue], clock: SystemClock(), logger: logger) { _, _ in }
            let host = try ServiceHost(name: "bench-jobs", context: context, rpcEndpoints: ["ipc://\(folder)/jobs.sock"], logger: logger)
            service.register(on: host.server)
            composition = ServiceComposition([owner, reader, service.sweeper(), host])
            try composition.start()
            // The same tables and pragmas, used bare: one durable transaction to lease, one to complete.
            try BenchJobHost(path: folder + "/bare.db").close()
            bare = try Database(path: folder + "/bare.db")
            try bare.execute("PRAGMA journal_mode=WAL")
            try bare.execute("PRAGMA synchronous=FULL")
            bareLease = try bare.prepare("""
                UPDATE jobs SET state = 2, attempts = attempts + 1, lease_id = ?, lease_expires_at_ms = ?, worker_id = 'bare',
                    updated_at_ms = ? WHERE id = (SELECT id FROM jobs WHERE queue = 'bench' AND state = 1 AND run_at_ms <= ?
                    ORDER BY run_at_ms, id LIMIT 1) RETURNING id
                """)
            bareComplete = try bare.prepare(
                "UPDATE jobs SET state = 3, result = x'', finished_at_ms = ?, updated_at_ms = ? WHERE id = ? AND lease_id = ?")
        }

        func stop() { composition.stop() }

        /// Tops both tables up to `count` QUEUED jobs (setup, not measured).
        func enqueue(upTo count: Int) async throws {
            let now = SystemClock().nowMilliseconds()
            @Sendable func topUp(_ jobs: JobStore) throws {
                let queued = Int(try jobs.db.scalar("SELECT count(*) FROM jobs WHERE queue = 'bench' AND state = 1")!.int64Value!)
                for _ in 0..<max(0, count - queued) { _ = try jobs.enqueue(queue: "bench", payload: [], now: now) }
            }
            try await owner.write { _, jobs in try topUp(jobs) }
            let bareJobs = try JobStore(db: bare, queues: [QueueBenchmark.queue])
            try bare.inTransaction { try topUp(bareJobs) }
        }

        /// Lease then Complete, one job at a time per worker, each worker a client of its own.
        func workers(_ count: Int, maxJobs: Int32, seconds: Double) async throws -> Result {
            try await enqueue(upTo: 60_000)
            let clients = try (0..<count).map { _ in try RPCClient(context: context, endpoint: "ipc://\(folder)/jobs.sock") }
            defer { for client in clients { client.close() } }
            let end = monotonicNanoseconds() + Int64(seconds * 1e9)
            let start = monotonicNanoseconds()
            let (leases, jobs) = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        var request = LeaseRequest()
                        request.queue = "bench"
                        request.workerId = "worker-\(index)"
                        request.waitMs = 1000
                        request.maxJobs = maxJobs
                        var latencies: [Double] = []
                        var done = 0
                        while monotonicNanoseconds() < end {
                            let before = monotonicNanoseconds()
                            let jobs = try await client.call(JobQueueRPC.lease, request).jobs
                            latencies.append(Double(monotonicNanoseconds() - before) / 1000)
                            // A worker holding several jobs completes them as they finish: at once here.
                            try await withThrowingTaskGroup(of: Void.self) { completions in
                                for job in jobs {
                                    completions.addTask {
                                        var complete = CompleteRequest()
                                        complete.queue = "bench"
                                        complete.jobId = job.jobId
                                        complete.leaseId = job.leaseId
                                        _ = try await client.call(JobQueueRPC.complete, complete)
                                    }
                                }
                                try await completions.waitForAll()
                            }
                            done += jobs.count
                        }
                        return (latencies, done)
                    }
                }
                return try await group.reduce(into: ([Double](), 0)) { $0.0 += $1.0; $0.1 += $1.1 }
            }
            let elapsed = Double(monotonicNanoseconds() - start) / 1e9
            let name = "JobQueue over RPC, \(count) worker\(count == 1 ? "" : "s")" + (maxJobs > 1 ? ", max_jobs \(maxJobs)" : "")
            return Result(name: name, operations: jobs, seconds: elapsed, latencies: leases.sorted())
        }

        /// ListJobs(DONE), pages of 100 newest first, one after the other from a client of its
        /// own while `count` workers lease and complete as in ``workers(_:maxJobs:seconds:)``:
        /// the ListJobs latencies, and the workers' result beside them.
        func listBesideWorkers(_ count: Int, seconds: Double) async throws -> (listed: Result, beside: Result) {
            let client = try RPCClient(context: context, endpoint: "ipc://\(folder)/jobs.sock")
            defer { client.close() }
            let start = monotonicNanoseconds()
            let end = start + Int64(seconds * 1e9)
            let lister = Task {
                var request = ListJobsRequest()
                request.queue = "bench"
                request.state = .done
                request.pageSize = 100
                var latencies: [Double] = []
                while monotonicNanoseconds() < end {
                    let before = monotonicNanoseconds()
                    _ = try await client.call(JobQueueRPC.listJobs, request)
                    latencies.append(Double(monotonicNanoseconds() - before) / 1000)
                }
                return latencies
            }
            let workers = try await workers(count, maxJobs: 1, seconds: seconds)
            let latencies = try await lister.value
            let listed = Result(name: "ListJobs(DONE) over RPC, pages of 100, beside \(count) workers", operations: latencies.count,
                seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies.sorted())
            return (listed, Result(name: "the \(count) workers beside it (Lease latency)", operations: workers.operations,
                seconds: workers.seconds, latencies: workers.latencies))
        }

        /// The page query of ListJobs(DONE) on the bare connection, one after the other.
        func bareList(seconds: Double) throws -> Result {
            let page = try bare.prepare(
                "SELECT * FROM jobs WHERE queue = 'bench' AND state = 3 AND id < ? ORDER BY id DESC LIMIT 101")
            var latencies: [Double] = []
            let start = monotonicNanoseconds()
            let end = start + Int64(seconds * 1e9)
            while monotonicNanoseconds() < end {
                let before = monotonicNanoseconds()
                try page.bind([.integer(Int64.max)])
                while try page.step() {}
                latencies.append(Double(monotonicNanoseconds() - before) / 1000)
            }
            return Result(name: "bare SQLite, the page query of ListJobs(DONE)", operations: latencies.count,
                seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies.sorted())
        }

        /// The same two transactions per job on the bare connection, one after the other: the
        /// lease not waiting for its fsync, the completion durable.
        func bare(seconds: Double) throws -> Result {
            var jobs = 0
            var latencies: [Double] = []
            let start = monotonicNanoseconds()
            let end = start + Int64(seconds * 1e9)
            while monotonicNanoseconds() < end {
                let now = SystemClock().nowMilliseconds()
                let before = monotonicNanoseconds()
                let lease = UUID().uuidString
                // As the queue does: the lease is committed without waiting for its fsync, the
                // completion with it.
                try bare.execute("PRAGMA synchronous=NORMAL")
                let id: Int64 = try bare.inTransaction {
                    try bareLease.bind([.text(lease), .integer(now + 30_000), .integer(now), .integer(now)])
                    guard try bareLease.step() else { return 0 }
                    defer { try? bareLease.reset() }
                    return bareLease.int64(at: 0)!
                }
                latencies.append(Double(monotonicNanoseconds() - before) / 1000)
                guard id > 0 else { break }
                try bare.execute("PRAGMA synchronous=FULL")
                try bare.inTransaction {
                    try bareComplete.bind([.integer(now), .integer(now), .integer(id), .text(lease)])
                    while try bareComplete.step() {}
                }
                jobs += 1
            }
            return Result(name: "bare SQLite, a lease and a durable completion per job", operations: jobs,
                seconds: Double(monotonicNanoseconds() - start) / 1e9, latencies: latencies.sorted())
        }

        /// Stops the host, puts `count` DONE rows in both tables in one bulk transaction each
        /// (setup, not measured), and starts a new host on the same files.
        func fillDone(_ count: Int) async throws -> Bench {
            stop()
            let service = try Database(path: folder + "/host.db")
            let now = SystemClock().nowMilliseconds()
            for db in [service, bare] {
                try db.inTransaction {
                    try db.execute("""
                        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
                        INSERT INTO jobs (queue, state, payload, attempts, max_attempts, run_at_ms, lease_id, worker_id, result,
                            created_at_ms, updated_at_ms, finished_at_ms)
                        SELECT 'bench', 3, x'', 1, 5, \(now), 'done', 'w', x'', \(now), \(now), \(now) FROM n
                        """)
                }
            }
            try service.close()
            return try Bench(folder: folder)
        }
    }
}

/// The smallest host of a queue: a database holding only the job tables.
final class BenchJobHost: JobStoreHost, WriteTransactionsStore {
    let db: Database
    let jobs: JobStore
    let transactions: WriteTransactions

    init(path: String) throws {
        db = try Database(path: path)
        try db.execute("PRAGMA journal_mode=WAL")
        try db.execute("PRAGMA synchronous=FULL")
        try JobStore.migrate(db)
        transactions = WriteTransactions(db)
        jobs = try JobStore(db: db, queues: [QueueBenchmark.queue])
    }

    func close() throws { try db.close() }
}
