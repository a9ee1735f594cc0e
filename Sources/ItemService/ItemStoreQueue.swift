import Foundation
import Synchronization

/// The serial owner of an `ItemStore`: one dedicated thread that opens the store and runs
/// jobs one at a time, so SQLite's blocking work (fsync included) never holds a thread of the
/// Swift concurrency pool. Callers `await perform { store in … }`.
public final class ItemStoreQueue: Sendable {
    /// A job: runs on the store's thread and returns how to resume its caller once the
    /// transaction it ran in has committed (or, given an error, failed to).
    typealias Job = @Sendable (ItemStore?) -> Ran
    typealias Completion = @Sendable ((any Error)?) -> Void

    /// What a job left behind when it ran.
    struct Ran {
        /// Resumes the job's caller, given the error of the commit (nil: committed, or none).
        let complete: Completion
        /// Whether the job's answer stands when SQLite rolled back the batch's transaction
        /// while it ran: a failure of its own does (nothing of it is kept); a success does not
        /// (what it wrote went with the transaction, what it read may have been undone), nor a
        /// write that found the transaction gone. Those run again alone.
        let answerSurvivesLostBatch: Bool
    }

    /// The most jobs that share one commit.
    static let maxBatch = 64

    private struct State {
        var jobs: [Job] = []
        var closing = false
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Opens the store at `path` on a new thread; throws what opening threw.
    ///
    /// - Parameter seedPath: A database copied to `path` when none exists yet.
    public init(path: String, seedPath: String? = nil) throws {
        let opened = DispatchSemaphore(value: 0)
        let openError = Mutex<(any Error)?>(nil)
        let thread = Thread { [self] in
            let store: ItemStore
            do {
                store = try ItemStore(path: path, seedPath: seedPath)
            } catch {
                openError.withLock { $0 = error }
                opened.signal()
                finished.signal()
                return
            }
            opened.signal()
            var closing = false
            while !closing {
                signal.wait()
                // Drain until empty: one wake-up may stand for many jobs.
                while true {
                    let (jobs, stop) = state.withLock { state in
                        defer { state.jobs.removeAll() }
                        return (state.jobs, state.closing)
                    }
                    for start in stride(from: 0, to: jobs.count, by: Self.maxBatch) {
                        Self.runBatch(jobs[start..<min(jobs.count, start + Self.maxBatch)], on: store)
                    }
                    if jobs.isEmpty {
                        closing = stop
                        break
                    }
                }
            }
            try? store.close()
            finished.signal()
        }
        thread.name = "item-store"
        thread.start()
        opened.wait()
        if let error = openError.withLock({ $0 }) {
            state.withLock { $0.closing = true }
            throw error
        }
    }

    /// Runs `body` on the store's thread and returns its result; throws `ItemStoreError.closed`
    /// once the queue is closing.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (ItemStore) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            submit(body) { continuation.resume(with: $0) }
        }
    }

    /// Runs `body` on the store's thread, then calls `done` on that thread once the transaction
    /// it ran in has committed (or with the error); `ItemStoreError.closed` once closing.
    /// Never blocks the caller: the RPC server's I/O thread calls it directly.
    public func submit<T: Sendable>(
        _ body: @escaping @Sendable (ItemStore) throws -> T,
        then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let job = Self.job(body, then: done)
        let accepted = state.withLock { state -> Bool in
            guard !state.closing else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            signal.signal()
        } else {
            done(.failure(ItemStoreError.closed))
        }
    }

    /// Runs the jobs already queued, closes the database and ends the thread; safe to call twice.
    public func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return }
        signal.signal()
        finished.wait()
        // Let a second close() return at once too.
        finished.signal()
    }

    /// A job running `body` whose caller hears `done` once the transaction it ran in has ended.
    static func job<T: Sendable>(
        _ body: @escaping @Sendable (ItemStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) -> Job {
        { store in
            guard let store else {
                return Ran(complete: { _ in done(.failure(ItemStoreError.closed)) }, answerSurvivesLostBatch: true)
            }
            let result = Result { try body(store) }
            let survives: Bool
            switch result {
            case .success: survives = false
            case .failure(let error): survives = !(error is ItemStore.BatchTransactionLost)
            }
            return Ran(complete: { commitError in done(commitError.map { .failure($0) } ?? result) }, answerSurvivesLostBatch: survives)
        }
    }

    /// Runs jobs that queued up together in one transaction, so concurrent writes share an
    /// fsync; a single job runs in its own. Callers are resumed after the commit, each with
    /// what became of its own work.
    static func runBatch(_ jobs: ArraySlice<Job>, on store: ItemStore) {
        guard jobs.count > 1, (try? store.beginBatch()) != nil else {
            for job in jobs { job(store).complete(nil) }
            return
        }
        var completions: [Completion] = []
        for index in jobs.indices {
            let ran = jobs[index](store)
            // Asked after every job, reads included: SQLite rolls back the whole transaction
            // when any statement fails with IOERR, NOMEM or FULL, and a read's error goes
            // through no `write` that would notice.
            if store.batchIsOpen() {
                completions.append(ran.complete)
                continue
            }
            // The transaction is gone, and the jobs before this one with it: they run again,
            // and the rest run too, each alone. Answering them the batch's fate instead would
            // tell a caller its write failed when a later transaction had committed it, or the
            // reverse. This job's own error is its answer; a success is not (see `Ran`).
            if ran.answerSurvivesLostBatch { ran.complete(nil) }
            for position in jobs.indices where position != index || !ran.answerSurvivesLostBatch {
                jobs[position](store).complete(nil)
            }
            return
        }
        var commitError: (any Error)?
        do { try store.commitBatch() } catch { commitError = error }
        for completion in completions { completion(commitError) }
    }
}
