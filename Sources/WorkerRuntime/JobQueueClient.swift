import Proto
import RPC

/// What a `JobRunner` needs from the queue it runs: Lease, Extend, Complete and Fail, with the
/// JobQueue messages, each throwing the `RPCError` the service would answer. Two kinds: the
/// queue of another process over RPC (``RPCJobQueueClient``), and a queue in the runner's own
/// process, on its database owner (item-service's `cascade`).
public protocol JobQueueClient: Sendable {
    /// Leases up to max_jobs ready jobs, waiting up to wait_ms for one when none is.
    func lease(_ request: LeaseRequest) async throws(RPCError) -> LeaseResponse

    /// Extends a lease; answers within `timeoutMilliseconds` or throws.
    func extend(_ request: ExtendRequest, timeoutMilliseconds: Int64) async throws(RPCError) -> ExtendResponse

    /// Completes a job; `idempotencyKey` makes a repeat after a lost reply answer as the first.
    func complete(_ request: CompleteRequest, idempotencyKey: String) async throws(RPCError) -> CompleteResponse

    /// Fails a job (or gives it back); `idempotencyKey` as for ``complete(_:idempotencyKey:)``.
    func fail(_ request: FailRequest, idempotencyKey: String) async throws(RPCError) -> JobQueueFailed
}

/// What a Fail did.
public struct JobQueueFailed: Sendable {
    /// The service's answer: the job's state now.
    public var response: FailResponse
    /// How long until the job's next attempt, when the queue tells (in process): nil over RPC,
    /// whose answer carries only the state.
    public var nextAttemptInMilliseconds: Int64?

    public init(response: FailResponse, nextAttemptInMilliseconds: Int64? = nil) {
        self.response = response
        self.nextAttemptInMilliseconds = nextAttemptInMilliseconds
    }
}

/// A queue served by another process (JobQueue over RPC) through a started connection.
public struct RPCJobQueueClient: JobQueueClient {
    private let connection: ClientConnection

    public init(_ connection: ClientConnection) {
        self.connection = connection
    }

    public func lease(_ request: LeaseRequest) async throws(RPCError) -> LeaseResponse {
        // A long poll: the call outlives the wait by the time an answer takes to come back.
        let options = CallOptions(timeoutMilliseconds: UInt32(request.waitMs) + 10_000)
        return try await connection.client.call(JobQueueRPC.lease, request, options: options)
    }

    public func extend(_ request: ExtendRequest, timeoutMilliseconds: Int64) async throws(RPCError) -> ExtendResponse {
        try await connection.client.call(
            JobQueueRPC.extend, request, options: CallOptions(timeoutMilliseconds: UInt32(clamping: timeoutMilliseconds)))
    }

    public func complete(_ request: CompleteRequest, idempotencyKey: String) async throws(RPCError) -> CompleteResponse {
        // With an idempotency key the client sends a completion that was not heard again (4
        // attempts); the service answers a repeat as the first was, storing nothing twice.
        let options = CallOptions(timeoutMilliseconds: 30_000, idempotencyKey: idempotencyKey)
        return try await connection.client.call(JobQueueRPC.complete, request, options: options)
    }

    public func fail(_ request: FailRequest, idempotencyKey: String) async throws(RPCError) -> JobQueueFailed {
        // Keyed: a Fail whose reply was lost is answered again, not refused as a stale lease.
        let options = CallOptions(idempotencyKey: idempotencyKey)
        return JobQueueFailed(response: try await connection.client.call(JobQueueRPC.fail, request, options: options))
    }
}
