import CurveAuth
import Proto
import Runtime
import Locking

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
    /// The caller's key when the server has CURVE keys (nil without: every caller is trusted,
    /// as it can only be on this machine). Its role was checked against the method's callers;
    /// a handler binds what a worker role may do to the jobs it holds.
    public let caller: CallerKey?
    /// Who called, as the per-peer limits count callers: the client's CURVE key (its ZAP user
    /// id) when the server uses CURVE, else its connection's routing id.
    public let peer: [UInt8]
    /// The deadline on the monotonic clock, in milliseconds.
    let deadlineMilliseconds: Int64
    let baseLogger: Logger
    /// What runs when this call's answer does not reach its caller (`onUndelivered`).
    let undelivered = UndeliveredHook()

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

    /// Runs `body` (once, on the server's I/O thread; keep it short) if this call's answer does
    /// not reach its caller: the caller disconnected (its process stopped or died while the call
    /// waited), its queue was full, or it was answered already (its deadline passed, or the
    /// server stopped). A handler whose answer hands something over (a Lease that leased jobs)
    /// takes it back here, instead of leaving it to a caller that will never see it.
    public func onUndelivered(_ body: @escaping @Sendable () -> Void) {
        undelivered.body.withLock { $0 = body }
    }
}

/// Who made a call, when the server has CURVE keys: the role and name its key is allowed with.
public struct CallerKey: Sendable, Equatable {
    public let role: Role
    public let name: String?
    /// Its Z85 public key.
    public let publicKey: String

    public init(role: Role, name: String?, publicKey: String) {
        self.role = role
        self.name = name
        self.publicKey = publicKey
    }

    /// "'thumbs-1' (thumbnail-worker)", for messages.
    public var description: String { (name.map { "'\($0)' " } ?? "") + "(\(role.rawValue))" }
}

/// The `RPCContext.onUndelivered` closure of one call.
final class UndeliveredHook: Sendable {
    let body = Locked<(@Sendable () -> Void)?>(nil)

    /// Runs the closure, if one was set, once.
    func fire() {
        body.withLock { body in
            defer { body = nil }
            return body
        }?()
    }
}
