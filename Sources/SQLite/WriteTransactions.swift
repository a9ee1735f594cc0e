/// The write transactions of one writer connection run by a ``DatabaseOwner``: alone, each write
/// commits in a transaction of its own; inside a group commit's batch (``beginBatch()`` to
/// ``commitBatch()``) each runs in a savepoint, so a failing job undoes only itself.
///
/// A store keeps one beside its connection and answers the ``GroupCommitStore`` requirements
/// with it (``WriteTransactionsStore``). Used on the owner's thread only, like the connection.
public final class WriteTransactions {
    public let db: Database
    /// Called after SQLite undid writes of this connection (a failed write, a lost batch, a
    /// failed commit): a store that mirrors rows in memory reads them back here.
    public var undone: () -> Void = {}
    /// True between ``beginBatch()`` and ``commitBatch()``, while the batch's transaction is open.
    public private(set) var inBatch = false
    /// Set when SQLite rolled back a batch's whole transaction in one of its jobs: any statement
    /// that fails with SQLITE_FULL, IOERR or NOMEM does that (a read too), and RAISE(ROLLBACK)
    /// can. The jobs before it were undone with it.
    public private(set) var batchLost = false

    /// The synchronous setting the store opened its connection with (2 FULL, 1 NORMAL, 0 OFF),
    /// read on first use: what a durable commit runs at.
    private lazy var ownSynchronous: Int64 = (try? db.scalar("PRAGMA synchronous")?.int64Value) ?? 2
    /// Set while commits run below ``ownSynchronous`` (``commitDurably(_:)``).
    private var relaxed = false

    public init(_ db: Database) {
        self.db = db
    }

    /// Rows changed by the connection since it opened (`GroupCommitStore.totalChanges`).
    public var totalChanges: Int { db.totalChanges }

    /// The write-ahead log's path in WAL mode, for a store whose commits sync (FULL): a store
    /// that turned syncing off has nothing for a `LogSyncer` to do (`GroupCommitStore.writeAheadLog`).
    public var writeAheadLog: String? { ownSynchronous >= 2 ? db.writeAheadLogPath : nil }

    /// Commits at the store's own synchronous setting (durable) or at most NORMAL, switching
    /// only when that changes. In WAL mode a NORMAL commit is not synced; it survives the
    /// process dying, may roll back at a power loss, and the next synced commit of the log
    /// covers it. Between transactions only.
    public func commitDurably(_ wanted: Bool) throws {
        guard wanted == relaxed else { return }
        precondition(!inBatch && db.isAutocommit, "the synchronous setting changes between transactions only")
        try db.execute("PRAGMA synchronous=\(wanted ? ownSynchronous : min(ownSynchronous, 1))")
        relaxed = !wanted
    }

    /// Runs `body` in a write transaction (a savepoint inside a batch); on failure nothing of it
    /// is kept and ``undone`` is called.
    ///
    /// Writes nest: one inside another (or inside a batch) is a savepoint of it.
    public func write<T>(_ body: () throws -> T) throws -> T {
        guard inBatch || !db.isAutocommit else {
            do {
                return try db.inTransaction(.immediate, body)
            } catch {
                undone()
                throw error
            }
        }
        // A statement of this job that failed before this write (a read whose error the job did
        // not pass on) made SQLite roll back the batch's transaction: a SAVEPOINT now would open
        // a transaction of its own, behind the batch's back.
        guard !db.isAutocommit else {
            loseBatch()
            throw BatchTransactionLost()
        }
        try db.execute("SAVEPOINT job")
        do {
            let result = try body()
            try db.execute("RELEASE job")
            return result
        } catch {
            if db.isAutocommit {
                // SQLite rolled back the whole transaction, not only this job: the batch's
                // earlier jobs (or the enclosing write) went with it. A batch ends here
                // (`DatabaseOwner.runBatch` runs the other jobs again, each alone).
                if inBatch { loseBatch() } else { undone() }
            } else {
                // Undo this job only; the batch's other jobs stay.
                try? db.execute("ROLLBACK TO job")
                try? db.execute("RELEASE job")
                undone()
            }
            throw error
        }
    }

    /// Whether the batch's transaction is still open after a job. When SQLite has rolled it
    /// back, in a write or in a read (whose error reaches no `write`), the batch ends here.
    public func batchIsOpen() -> Bool {
        if inBatch && db.isAutocommit { loseBatch() }
        return !batchLost
    }

    /// Ends a batch whose transaction SQLite rolled back: nothing of it is kept.
    private func loseBatch() {
        inBatch = false
        batchLost = true
        undone()
    }

    /// Group commit: the jobs between `beginBatch()` and `commitBatch()` share one transaction
    /// (one fsync), each in its own savepoint. Their callers hear back only after the commit.
    public func beginBatch() throws {
        precondition(!inBatch, "batches do not nest")
        try db.execute("BEGIN IMMEDIATE")
        inBatch = true
        batchLost = false
    }

    /// Commits the batch; on failure ``undone`` is called, and nothing of it is kept unless the
    /// failure is ``CommitOutcomeUnknown`` (an I/O error at COMMIT: it may be kept).
    public func commitBatch() throws {
        inBatch = false
        do {
            try db.commit()
        } catch {
            undone()
            throw error
        }
    }
}

/// A ``GroupCommitStore`` whose writes go through the ``WriteTransactions`` beside its
/// connection: its group-commit requirements, and `write` (`JobStoreHost`), come from it.
public protocol WriteTransactionsStore: GroupCommitStore {
    var transactions: WriteTransactions { get }
}

extension WriteTransactionsStore {
    public func write<T>(_ body: () throws -> T) throws -> T { try transactions.write(body) }
    public func commitDurably(_ durable: Bool) throws { try transactions.commitDurably(durable) }
    public var writeAheadLog: String? { transactions.writeAheadLog }
    public var totalChanges: Int { transactions.totalChanges }
    public func beginBatch() throws { try transactions.beginBatch() }
    public func batchIsOpen() -> Bool { transactions.batchIsOpen() }
    public func commitBatch() throws { try transactions.commitBatch() }
}
