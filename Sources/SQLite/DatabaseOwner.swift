import Foundation
import Runtime
import Locking
import Synchronization

/// A store a ``DatabaseOwner`` runs jobs on: it opens one transaction for a batch of jobs
/// (each job then writes in a savepoint of its own), tells after each job whether SQLite
/// still has that transaction open, and commits it.
public protocol GroupCommitStore: AnyObject, SendableMetatype {
    /// Whether the next commits run at the store's own synchronous setting (true: FULL waits
    /// for the fsync) or at most NORMAL (false: in WAL mode a commit kept through the process
    /// dying that a power loss may roll back; the next synced commit covers it too). Called
    /// between transactions only.
    func commitDurably(_ durable: Bool) throws
    /// The path of the write-ahead log when the database is in WAL mode (nil otherwise): the
    /// owner of a writer then commits a batch that has more jobs behind it without waiting for
    /// the disk and has a ``LogSyncer`` sync the log for its durable callers, off its thread.
    var writeAheadLog: String? { get }
    /// Rows inserted, updated or deleted by the connection since it opened
    /// (`sqlite3_total_changes64`): a batch that changed none has nothing to sync.
    var totalChanges: Int { get }
    /// Opens the transaction that the next jobs share.
    func beginBatch() throws
    /// Whether the batch's transaction is still open: SQLite rolls back the whole transaction
    /// when any statement fails with IOERR, NOMEM or FULL, a read too.
    func batchIsOpen() -> Bool
    /// Commits the batch's transaction; on failure nothing of it is kept.
    func commitBatch() throws
    /// Closes the database.
    func close() throws
}

/// Thrown by a write that found its batch's transaction gone (SQLite rolled it back under an
/// earlier job): nothing of it was stored, and the owner runs it again alone.
public struct BatchTransactionLost: Error, CustomStringConvertible, Sendable {
    public init() {}

    public var description: String {
        "SQLite rolled back the group commit's transaction before this write (an earlier statement failed with an I/O error, a full disk or no memory); nothing of it was stored"
    }
}

/// The serial owner of one SQLite database: one dedicated thread that opens the store, runs
/// jobs one at a time and closes it, so SQLite's blocking work (fsync included) never holds a
/// thread of the Swift concurrency pool.
///
/// Jobs that queue up together run in one transaction (group commit, up to ``maxBatch``), so
/// concurrent writes share an fsync; each caller hears back after the commit, with what became
/// of its own job. The thread sleeps until a job or ``close()`` signals it, and `close()`
/// joins it. As a `LifecycleService`, ``start()`` spawns the thread and opens the store and
/// ``stop()`` closes it: a part's composition opens its stores first and closes them last.
public final class DatabaseOwner<Store: GroupCommitStore>: LifecycleService {
    /// The open store (nil before it opens and once closed), used under its lock only: by the
    /// owner's thread for each batch, and by ``performHere(_:)``.
    private final class Connection: @unchecked Sendable {
        private let lock = NSLock()
        private var store: Store?
        /// Callers blocked until the store is free.
        let waiting = Atomic<Int>(0)

        func use<T>(_ body: (inout Store?) throws -> T) rethrows -> T {
            if !lock.try() {
                waiting.add(1, ordering: .relaxed)
                lock.lock()
                waiting.subtract(1, ordering: .relaxed)
            }
            defer { lock.unlock() }
            return try body(&store)
        }
    }

    /// A queued job: runs on the owner's thread and says how its caller is resumed.
    package struct Job: Sendable {
        /// Whether its caller hears back only once its commit is on disk (see ``submit(durable:_:then:)``).
        let durable: Bool
        let run: @Sendable (Store) -> JobRan
        /// Answers its caller `error` without running it.
        let refuse: @Sendable (any Error) -> Void
    }

    /// The most jobs that share one commit.
    public static var maxBatch: Int { 64 }

    private struct State {
        var jobs: [Job] = []
        var phase = Phase.idle
        /// Set by ``fault(_:)``: jobs are refused from then on (``StorageFaulted``).
        var fault: String?
    }

    private enum Phase {
        /// ``start()`` has not opened the store yet.
        case idle
        /// The thread runs jobs.
        case running
        /// ``close()`` has begun (or opening failed): jobs are refused.
        case closing
    }

    /// The thread's name, and this service's.
    public let name: String
    /// Whether jobs that queue up together share one transaction; a reader's owner runs each alone.
    public let groupCommit: Bool
    private let state = Locked(State())
    /// The open store, held by the thread while it runs jobs and by ``performHere(_:)``.
    private let connection = Connection()
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// A writer's log syncer, once open in WAL mode.
    private let syncer = Locked<LogSyncer?>(nil)
    /// What a job or a submission answers before ``start()`` and once the owner is closing.
    private let closedError: any Error & Sendable
    private let open: @Sendable () throws -> Store
    /// Told once of a failure the owner cannot go on after (``fault(_:)``).
    private let onFault: @Sendable (String) -> Void

    /// An owner that opens the store with `open` on a thread named `name` when it starts;
    /// nothing runs before ``start()``.
    ///
    /// - Parameters:
    ///   - closedError: What a job submitted before ``start()`` or once ``close()`` has begun
    ///     fails with.
    ///   - groupCommit: False runs every job alone, as a read-only connection must.
    ///   - onFault: Told (once, on whichever thread met it) of a commit whose outcome is not
    ///     known (``CommitOutcomeUnknown``) or another ``fault(_:)``: the process should stop
    ///     and let the next open's recovery decide.
    public init(
        name: String, closedError: any Error & Sendable, groupCommit: Bool = true,
        onFault: @escaping @Sendable (String) -> Void = { _ in },
        open: @escaping @Sendable () throws -> Store
    ) {
        self.name = name
        self.groupCommit = groupCommit
        self.closedError = closedError
        self.onFault = onFault
        self.open = open
    }

    /// Opens the store on a new thread and returns once it is open; throws what opening threw
    /// (the thread has then ended), or the closed error once ``close()`` was called. Call once.
    public func start() throws {
        let idle = try state.withLock { state -> Bool in
            if case .closing = state.phase { throw closedError }
            return state.phase == .idle
        }
        precondition(idle, "\(name): start() called twice")
        let opened = DispatchSemaphore(value: 0)
        let openError = Locked<(any Error)?>(nil)
        let thread = Thread { [self] in
            nameThisThread(name)
            let store: Store
            do {
                store = try open()
            } catch {
                openError.withLock { $0 = error }
                opened.signal()
                finished.signal()
                return
            }
            connection.use { $0 = store }
            let syncer = groupCommit
                ? store.writeAheadLog.map { log in
                    LogSyncer(logPath: log, name: "\(name).sync") { [weak self] failure in self?.fault(failure.reason) }
                }
                : nil
            syncer?.start()
            self.syncer.withLock { $0 = syncer }
            opened.signal()
            serve(syncer)
            // The callers still waiting for their fsync hear back before the store closes.
            syncer?.stop()
            connection.use { store in
                try? store?.close()
                store = nil
            }
            finished.signal()
        }
        thread.name = name
        thread.start()
        opened.wait()
        if let error = openError.withLock({ $0 }) {
            state.withLock { $0.phase = .closing }
            throw error
        }
        let closedWhileOpening = state.withLock { state -> Bool in
            guard state.phase == .idle else { return true }
            state.phase = .running
            return false
        }
        if closedWhileOpening {
            // That close() found nothing to join; the thread is ours to end.
            wake.signal()
            finished.wait()
            finished.signal()
        }
    }

    /// Closes the store (``close()``).
    public func stop() { close() }

    /// Whether the owner commits without waiting for the disk and syncs the log for durable
    /// jobs off its thread (a writer in WAL mode, once started), and the fsyncs made so far.
    package var logSyncs: Int? { syncer.withLock { $0?.syncs } }

    /// Runs the jobs as they come until closing, then those still queued. With a `syncer`, a
    /// batch with more jobs waiting behind it commits without waiting for the disk, and the
    /// callers of its durable jobs hear back from the syncer once the log is synced (the others,
    /// and failures, at once), while the owner runs the next batch; a batch with nothing behind
    /// it commits as SQLite does without a syncer, its fsync in the commit.
    private func serve(_ syncer: LogSyncer?) {
        var closing = false
        while !closing {
            wake.wait()
            // Drain until empty: one wake-up may stand for many jobs.
            while true {
                let (jobs, stop, faulted) = state.withLock { state in
                    defer { state.jobs.removeAll() }
                    return (state.jobs, state.phase == .closing, state.fault)
                }
                if let faulted {
                    // Nothing runs on a database whose last commit's fate is unknown.
                    for job in jobs { job.refuse(StorageFaulted(reason: faulted)) }
                    if jobs.isEmpty {
                        closing = stop
                        break
                    }
                    continue
                }
                let batches = Self.batches(of: jobs, size: groupCommit ? Self.maxBatch : 1)
                for (index, batch) in batches.enumerated() {
                    // Callers are resumed once the store is free again: one may go on to
                    // `performHere`.
                    // With more jobs waiting behind this batch, commit without the fsync and let the
                    // syncer do it while they run; alone, SQLite syncs in its commit, as without one.
                    let more = index + 1 < batches.count || state.withLock { !$0.jobs.isEmpty }
                    let answers = connection.use { store in
                        Self.batch(batch, on: store!, syncsLater: syncer != nil && more)
                    }
                    // Faulted before its callers hear of it, so none of them can queue a write behind it.
                    if let unknown = answers.lazy.compactMap(\.outcomeUnknown).first { fault(unknown.reason) }
                    var afterSync: [@Sendable ((any Error)?) -> Void] = []
                    for answer in answers {
                        if answer.waitsForSync { afterSync.append(answer.resume) } else { answer.resume(nil) }
                    }
                    if !afterSync.isEmpty { syncer?.afterSync(afterSync) }
                    if state.withLock({ $0.fault != nil }) {
                        // The later batches of this turn do not run either.
                        let reason = state.withLock { $0.fault ?? "" }
                        for job in batches[(index + 1)...].joined() { job.refuse(StorageFaulted(reason: reason)) }
                        break
                    }
                }
                if jobs.isEmpty {
                    closing = stop
                    break
                }
            }
        }
    }

    /// Runs `body` on the owner's thread and returns its result once the transaction it ran in
    /// has committed; throws the owner's closed error before ``start()`` and once it is closing.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (Store) throws -> T) async throws -> T {
        try await withVisibleCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit(body) { continuation.resume(with: $0) }
        }
    }

    /// Runs `body` on the owner's thread, then calls `done` on that thread once the transaction
    /// it ran in has committed (or with the error); the closed error before ``start()`` and once
    /// closing. Never blocks
    /// the caller: the RPC server's I/O thread calls it directly.
    ///
    /// - Parameter durable: false for a write whose loss at a power cut costs nothing but work
    ///   done again (a job queue's lease): its commit does not wait for an fsync when every job
    ///   of its batch says so. It still survives the process being killed.
    public func submit<T: Sendable>(
        durable: Bool = true,
        _ body: @escaping @Sendable (Store) throws -> T,
        then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let job = Self.job(durable: durable, body, then: done)
        let refusal = state.withLock { state -> (any Error)? in
            guard state.phase == .running else { return closedError }
            if let fault = state.fault { return StorageFaulted(reason: fault) }
            state.jobs.append(job)
            return nil
        }
        if let refusal {
            done(.failure(refusal))
        } else {
            wake.signal()
        }
    }

    /// Stops running jobs for good after a failure the owner cannot go on after (a commit whose
    /// outcome is unknown, found here or by a caller: the folder fsync of a blob whose row is
    /// committed, say): every job queued or submitted from now on is refused with
    /// ``StorageFaulted``, and `onFault` is told, once. Closing still works.
    public func fault(_ reason: String) {
        let first = state.withLock { state -> Bool in
            guard state.fault == nil else { return false }
            state.fault = reason
            return true
        }
        guard first else { return }
        wake.signal()
        onFault(reason)
    }

    /// Callers of ``performHere(_:)`` (or the thread) blocked now until the store is free: for
    /// tests that let a batch go on only once a caller waits for it.
    package var waitingForTheStore: Int { connection.waiting.load(ordering: .relaxed) }

    /// The failure ``fault(_:)`` recorded, if any.
    public var faultReason: String? { state.withLock { $0.fault } }

    /// Runs `body` with the store on the calling thread, between two of the owner's batches, and
    /// returns what it returned; throws the closed error before ``start()`` and once closed.
    ///
    /// For a caller that is itself a thread for blocking work (an I/O lane) and would otherwise
    /// hand a short read over and sleep until it came back: it waits for the batch running, if
    /// any, instead. Not in a transaction of the owner's; a writer's owner should not be asked
    /// to write here.
    public func performHere<T>(_ body: (Store) throws -> T) throws -> T {
        try connection.use { store in
            guard let store else { throw closedError }
            return try body(store)
        }
    }

    /// Runs the jobs already queued, closes the database and joins the thread; safe to call
    /// twice, and before ``start()`` (which then throws the closed error).
    public func close() {
        let running = state.withLock { state -> Bool in
            defer { state.phase = .closing }
            return state.phase == .running
        }
        guard running else { return }
        wake.signal()
        finished.wait()
        // Let a second close() return at once too.
        finished.signal()
    }

    /// The batches `jobs` run in, at most `size` jobs each: the jobs that do not wait for the
    /// disk (a Lease, a read) first, in batches of their own, so they are answered at their
    /// commit instead of after up to ``maxBatch`` durable writes that queued with them; then the
    /// durable ones. Jobs that queued together were submitted at once, so no caller's order is
    /// changed; each group keeps its own order.
    package static func batches(of jobs: [Job], size: Int) -> [ArraySlice<Job>] {
        let quick = jobs.filter { !$0.durable }, durable = jobs.filter(\.durable)
        return [quick, durable].flatMap { group in
            stride(from: 0, to: group.count, by: size).map { group[$0..<min(group.count, $0 + size)] }
        }
    }

    /// A job running `body` whose caller hears `done` once the transaction it ran in has ended.
    package static func job<T: Sendable>(
        durable: Bool = true, _ body: @escaping @Sendable (Store) throws -> T,
        then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> Job {
        Job(durable: durable) { store in
            // A full disk is the operator's to fix, not a bug: it says so.
            let result = Result { try body(store) }.mapError { error -> any Error in
                guard let sqlite = error as? SQLiteError, sqlite.isFull else { return error }
                return DiskFull(reason: "\(sqlite)")
            }
            let survives: Bool
            var unknown: CommitOutcomeUnknown?
            switch result {
            case .success: survives = false
            case .failure(let error):
                survives = !(error is BatchTransactionLost)
                // A job alone commits in its own transaction: an I/O error at that COMMIT.
                unknown = error as? CommitOutcomeUnknown
            }
            return JobRan(
                complete: { commitError in done(commitError.map { .failure($0) } ?? result) }, answerSurvivesLostBatch: survives,
                outcomeUnknown: unknown)
        } refuse: { error in
            done(.failure(error))
        }
    }

    /// Runs jobs that queued up together in one transaction, so concurrent writes share an
    /// fsync; a single job runs in its own. Callers are resumed after the commit, each with
    /// what became of its own work.
    package static func runBatch(_ jobs: ArraySlice<Job>, on store: Store) {
        for answer in batch(jobs, on: store, syncsLater: false) { answer.resume(nil) }
    }

    /// How to resume one caller of a batch: `resume` takes the error of the log's fsync (nil
    /// when synced, or when no sync is waited for).
    private struct Answer {
        /// Whether the caller waits for the syncer: a durable job committed without its fsync.
        let waitsForSync: Bool
        /// Set when the job's commit failed with its outcome unknown: the owner faults.
        var outcomeUnknown: CommitOutcomeUnknown? = nil
        let resume: @Sendable ((any Error)?) -> Void
    }

    /// ``runBatch(_:on:)`` returning how to resume each caller, in order, instead of resuming
    /// them. `syncsLater`: commit without waiting for the disk, whatever the jobs ask; the
    /// durable ones' answers then wait for the owner's syncer.
    private static func batch(_ jobs: ArraySlice<Job>, on store: Store, syncsLater: Bool) -> [Answer] {
        let changesBefore = store.totalChanges
        let answers = runJobs(jobs, on: store, syncsLater: syncsLater)
        // Reads only (a GetItem through a writer's owner): nothing to wait for.
        guard syncsLater, store.totalChanges == changesBefore else { return answers }
        return answers.map { Answer(waitsForSync: false, outcomeUnknown: $0.outcomeUnknown, resume: $0.resume) }
    }

    /// ``batch(_:on:syncsLater:)`` without the check for a batch that wrote nothing.
    private static func runJobs(_ jobs: ArraySlice<Job>, on store: Store, syncsLater: Bool) -> [Answer] {
        // Durable if any job asks for it. A store that cannot say so runs its jobs durably
        // anyway (FULL is where it stays); one that cannot be made durable fails them.
        let durable = !syncsLater && jobs.contains { $0.durable }
        do {
            try store.commitDurably(durable)
        } catch where durable {
            let failure = SendableError(error)
            return jobs.map { job in Answer(waitsForSync: false) { _ in job.refuse(failure.error) } }
        } catch {}
        func committed(_ job: Job, _ ran: JobRan, commitError: SendableError? = nil) -> Answer {
            Answer(
                waitsForSync: syncsLater && job.durable && commitError == nil,
                outcomeUnknown: commitError.flatMap { $0.error as? CommitOutcomeUnknown } ?? ran.outcomeUnknown
            ) { syncError in
                ran.complete(commitError?.error ?? syncError)
            }
        }
        guard jobs.count > 1, (try? store.beginBatch()) != nil else {
            return jobs.map { job in committed(job, job.run(store)) }
        }
        var ran: [(Job, JobRan)] = []
        for index in jobs.indices {
            let outcome = jobs[index].run(store)
            // Asked after every job, reads included: a read's error goes through no write
            // that would notice the lost transaction.
            if store.batchIsOpen() {
                ran.append((jobs[index], outcome))
                continue
            }
            // The transaction is gone, and the jobs before this one with it: they run again,
            // and the rest run too, each alone. Answering them the batch's fate instead would
            // tell a caller its write failed when a later transaction had committed it, or the
            // reverse. This job's own error is its answer; a success is not (see `JobRan`).
            var alone: [Answer] = []
            if outcome.answerSurvivesLostBatch { alone.append(Answer(waitsForSync: false) { _ in outcome.complete(nil) }) }
            for position in jobs.indices where position != index || !outcome.answerSurvivesLostBatch {
                alone.append(committed(jobs[position], jobs[position].run(store)))
            }
            return alone
        }
        var commitError: SendableError?
        do { try store.commitBatch() } catch { commitError = SendableError(error) }
        return ran.map { job, outcome in committed(job, outcome, commitError: commitError) }
    }
}

/// An error carried into a completion (errors are Sendable; the box keeps the closure's capture plain).
private struct SendableError: Sendable {
    let error: any Error
    init(_ error: any Error) { self.error = error }
}

/// What a job left behind when it ran.
package struct JobRan: Sendable {
    /// Resumes the job's caller, given the error of the commit (nil: committed, or none).
    let complete: @Sendable ((any Error)?) -> Void
    /// Whether the job's answer stands when SQLite rolled back the batch's transaction
    /// while it ran: a failure of its own does (nothing of it is kept); a success does not
    /// (what it wrote went with the transaction, what it read may have been undone), nor a
    /// write that found the transaction gone. Those run again alone.
    let answerSurvivesLostBatch: Bool
    /// The job committed alone and its commit's outcome is unknown.
    var outcomeUnknown: CommitOutcomeUnknown? = nil
}
