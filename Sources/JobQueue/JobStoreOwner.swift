import Locking
import RPC
import SQLite

/// Runs reads of the job tables on the thread that owns a connection: the host's writer, or a
/// read-only connection beside it (``JobReadConnection``) so that ListJobs, Stats, GetJob and
/// GetBatch never wait behind the writer's commits.
public protocol JobStoreReader: Sendable {
    /// Runs `body` on the owner's thread without writing, then calls `done` with what it returned.
    func read<T: Sendable>(
        _ body: @escaping @Sendable (JobStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void)
}

extension JobStoreReader {
    /// ``read(_:then:)``, awaited.
    public func read<T: Sendable>(_ body: @escaping @Sendable (JobStore) throws -> T) async throws -> T {
        try await withVisibleCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }
}

/// What a host gives `JobQueueService`: runs a closure with its `JobStore` on the thread that
/// owns the database, in a write transaction or in a read.
///
/// `Host` is the host's own store, which a completion effect writes its rows through.
public protocol JobStoreOwner: JobStoreReader {
    associatedtype Host

    /// Runs `body` in a write transaction on the owner's thread, then calls `done` (from any
    /// thread) once that transaction committed, or with the error; a throw of `body` undoes
    /// everything it wrote. Never blocks the caller.
    ///
    /// `durable` false: `done` may come before the commit is on disk (it survives the process
    /// being killed, not a power loss): for leases and heartbeats, whose loss only has a job run
    /// again (`DatabaseOwner.submit(durable:_:then:)`).
    func write<T: Sendable>(
        durable: Bool,
        _ body: @escaping @Sendable (Host, JobStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void)
}

extension JobStoreOwner {
    /// A durable ``write(durable:_:then:)``.
    public func write<T: Sendable>(
        _ body: @escaping @Sendable (Host, JobStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        write(durable: true, body, then: done)
    }

    /// ``write(durable:_:then:)``, awaited.
    public func write<T: Sendable>(durable: Bool = true, _ body: @escaping @Sendable (Host, JobStore) throws -> T) async throws -> T {
        try await withVisibleCheckedThrowingContinuation { continuation in
            write(durable: durable, body) { continuation.resume(with: $0) }
        }
    }
}

/// A store run by a `DatabaseOwner` whose connection carries the job tables: its
/// `DatabaseOwner` is then a ``JobStoreReader`` as it is.
public protocol JobStoreCarrier: GroupCommitStore {
    /// The jobs, on the store's connection.
    var jobs: JobStore { get }
}

/// A host store run by a `DatabaseOwner` that carries the job tables: its `DatabaseOwner` is
/// then a ``JobStoreOwner`` as it is.
public protocol JobStoreHost: JobStoreCarrier {
    /// Runs `body` in a write transaction (a savepoint inside a group commit's batch:
    /// `WriteTransactions.write`).
    func write<T>(_ body: () throws -> T) throws -> T
}

extension DatabaseOwner: JobStoreReader where Store: JobStoreCarrier {
    public func read<T: Sendable>(
        _ body: @escaping @Sendable (JobStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        submit({ store in try body(store.jobs) }, then: done)
    }
}

extension DatabaseOwner: JobStoreOwner where Store: JobStoreHost {
    public typealias Host = Store

    public func write<T: Sendable>(
        durable: Bool, _ body: @escaping @Sendable (Store, JobStore) throws -> T,
        then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        // SQLITE_FULL comes as SQLite's DiskFull: RESOURCE_EXHAUSTED with reason DISK_FULL.
        submit(durable: durable, { store in try store.write { try body(store, store.jobs) } }, then: done)
    }
}

/// A read-only connection to a host's database for the job tables' reads, beside the host's
/// writer: run it with a `DatabaseOwner` of its own (``DatabaseOwner/init(jobReaderOf:queues:name:)``),
/// started after the writer, which creates the tables.
public final class JobReadConnection: JobStoreCarrier, WriteTransactionsStore {
    public let jobs: JobStore
    public let transactions: WriteTransactions

    /// Opens `path` read-only for `queues` (those the writer's `JobStore` serves).
    public init(path: String, queues: [JobQueueConfiguration]) throws {
        let db = try Database(path: path, mode: .readOnly)
        try db.setBusyTimeout(milliseconds: 5000)
        transactions = WriteTransactions(db)
        jobs = try JobStore(db: db, queues: queues)
    }

    public func close() throws { try jobs.db.close() }
}

extension DatabaseOwner where Store == JobReadConnection {
    /// The owner of a ``JobReadConnection`` to the database at `path`, each read run alone.
    public convenience init(jobReaderOf path: String, queues: [JobQueueConfiguration], name: String) {
        self.init(name: name, closedError: RPCError.unavailable("\(name) is closed (stopping)"), groupCommit: false) {
            try JobReadConnection(path: path, queues: queues)
        }
    }
}
