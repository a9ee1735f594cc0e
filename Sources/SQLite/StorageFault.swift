import CSQLite

/// A commit whose outcome is not known: SQLite failed while making it durable (an I/O error at
/// COMMIT, or the write-ahead log's fsync after a commit made without one). The change may be in
/// the database or not, and a restart's recovery decides which; the process must not go on as
/// if it knew. Nothing whose row this commit may have made may be deleted (PostgreSQL's lesson
/// of 2018: an fsync that failed once is not retried on the same file and trusted).
public struct CommitOutcomeUnknown: Error, CustomStringConvertible, Sendable {
    /// What failed, e.g. "fdatasync of …/images.db-wal failed: Input/output error (errno 5)".
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String {
        "the disk failed while this change was being made durable (\(reason)): it may or may not have been stored; "
            + "the service stops, and its restart's recovery decides"
    }
}

/// A write refused because its database's owner met a failure it cannot recover from while
/// running (``CommitOutcomeUnknown``): it did not run, nothing of it was stored.
public struct StorageFaulted: Error, CustomStringConvertible, Sendable {
    /// The failure the owner met.
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String {
        "not stored: the service's disk failed (\(reason)) and it is stopping; retry once it is back"
    }
}

extension SQLiteError {
    /// SQLITE_IOERR and its extended codes: the disk failed under a read, a write or an fsync.
    public var isIOError: Bool { primaryCode == SQLITE_IOERR }

    /// SQLITE_FULL: the disk (or a quota) is full; nothing of the statement's transaction is kept.
    public var isFull: Bool { primaryCode == SQLITE_FULL }
}

/// A write refused because the disk (or a quota) is full (SQLITE_FULL): nothing of it was
/// stored, and the same write succeeds once there is room again.
public struct DiskFull: Error, CustomStringConvertible, Sendable {
    /// What was full, e.g. "SQLite error 13 (database or disk is full): … — in: COMMIT".
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { "the disk is full (\(reason)); nothing was stored: free space and retry" }
}
