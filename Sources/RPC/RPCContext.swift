import Proto
import Runtime

/// What a handler knows about the call it serves.
public struct RPCContext: Sendable {
    /// "/homepwner.v1.ItemService/CreateItem".
    public let method: String
    /// The client's request_id.
    public let requestID: UInt64
    /// The idempotency key of a mutating call, or "".
    public let idempotencyKey: String
    /// Request metadata, key → value.
    public let metadata: [String: String]
    /// The deadline on the monotonic clock, in milliseconds.
    let deadlineMilliseconds: Int64
    let baseLogger: Logger

    /// A logger tagged with the method and request id (built on use: most calls never log).
    public var logger: Logger {
        baseLogger.with(["method": method, "request_id": String(requestID)])
    }

    /// Milliseconds left before the deadline (0 when passed).
    public var remainingMilliseconds: Int64 { max(0, deadlineMilliseconds - monotonicMilliseconds()) }

    /// Whether the deadline has passed: the caller was (or is about to be) answered
    /// DEADLINE_EXCEEDED, so work queued for this call that has not started should not start.
    public var deadlinePassed: Bool { remainingMilliseconds == 0 }

    /// Throws DEADLINE_EXCEEDED when the deadline has passed; long handlers call it between
    /// steps, and work queued for the call (a store's queue) before it starts.
    public func checkDeadline() throws(RPCError) {
        if remainingMilliseconds == 0 { throw .deadlineExceeded("deadline passed while serving \(method)") }
    }
}
