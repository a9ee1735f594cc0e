import Proto
import RPC
import SQLite

// How the database owners' storage failures are answered. Here because JobQueue is the one
// module between SQLite and the services that knows both SQLite and the RPC layer.

extension CommitOutcomeUnknown: RPCStatusError {
    /// UNAVAILABLE: the service stops; retried once it is back, the write is found done or not
    /// (with an idempotency key, or a key of the caller's, a retry cannot make it twice).
    public var rpcStatus: StatusCode { .unavailable }
    public var rpcMessage: String { description }
}

extension StorageFaulted: RPCStatusError {
    public var rpcStatus: StatusCode { .unavailable }
    public var rpcMessage: String { description }
}

extension DiskFull: RPCStatusError {
    public var rpcStatus: StatusCode { .resourceExhausted }
    public var rpcMessage: String { description }
}
