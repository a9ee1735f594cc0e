import SQLite

/// What a host gives `JobQueueService`: runs a closure with its `JobStore` on the thread that
/// owns the database, in a write transaction or in a read.
///
/// `Host` is the host's own store, which a completion effect writes its rows through.
public protocol JobStoreOwner: Sendable {
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

    /// Runs `body` on the owner's thread without writing, then calls `done` with what it returned.
    func read<T: Sendable>(
        _ body: @escaping @Sendable (JobStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void)
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
        try await withCheckedThrowingContinuation { continuation in
            write(durable: durable, body) { continuation.resume(with: $0) }
        }
    }

    /// ``read(_:then:)``, awaited.
    public func read<T: Sendable>(_ body: @escaping @Sendable (JobStore) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }
}

/// A host store run by a `DatabaseOwner` that carries the job tables: its `DatabaseOwner` is
/// then a ``JobStoreOwner`` as it is.
public protocol JobStoreHost: GroupCommitStore {
    /// The jobs, on the store's connection.
    var jobs: JobStore { get }
    /// Runs `body` in a write transaction (a savepoint inside a group commit's batch:
    /// `WriteTransactions.write`).
    func write<T>(_ body: () throws -> T) throws -> T
}

extension DatabaseOwner: JobStoreOwner where Store: JobStoreHost {
    public typealias Host = Store

    public func write<T: Sendable>(
        durable: Bool, _ body: @escaping @Sendable (Store, JobStore) throws -> T,
        then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        submit(durable: durable, { store in try store.write { try body(store, store.jobs) } }, then: done)
    }

    public func read<T: Sendable>(
        _ body: @escaping @Sendable (JobStore) throws -> T, then done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        submit({ store in try body(store.jobs) }, then: done)
    }
}
