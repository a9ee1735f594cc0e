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
    /// RESOURCE_EXHAUSTED with reason DISK_FULL: unlike a busy server's, not worth retrying
    /// soon, and never a reason to give a job up (docs/protocol.md).
    public var rpcStatus: StatusCode { .resourceExhausted }
    public var rpcMessage: String { description }
    public var rpcReason: String { RPCError.diskFullReason }
}
