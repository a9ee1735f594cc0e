import Proto

/// A failed call: a status code of docs/protocol.md and a message a person can act on.
public struct RPCError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The gRPC canonical code.
    public var code: StatusCode
    /// Names the bad field or value, e.g. "value_in_dollars must be ≥ 0 (got -5)".
    public var message: String
    /// When non-zero, the earliest moment a retry makes sense.
    public var retryAfterMilliseconds: UInt32
    /// Which of the code's causes it was (`ResponseHeader.reason`, e.g. ``diskFullReason``);
    /// empty when the code says it all.
    public var reason: String

    /// An error with a code and a message.
    public init(_ code: StatusCode, _ message: String, retryAfterMilliseconds: UInt32 = 0, reason: String = "") {
        self.code = code
        self.message = message
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.reason = reason
    }

    public var description: String {
        "\(code.protoValueName ?? "CODE_\(code.rawValue)") (\(code.rawValue)): \(message)"
    }

    /// 3: the request names a bad field or value.
    public static func invalidArgument(_ message: String) -> RPCError { RPCError(.invalidArgument, message) }
    /// 5: the named thing does not exist.
    public static func notFound(_ message: String) -> RPCError { RPCError(.notFound, message) }
    /// 6: the thing to create exists already.
    public static func alreadyExists(_ message: String) -> RPCError { RPCError(.alreadyExists, message) }
    /// 9: the system is not in a state that allows the call.
    public static func failedPrecondition(_ message: String) -> RPCError { RPCError(.failedPrecondition, message) }
    /// 10: a concurrency conflict (e.g. a stale expected_version).
    public static func aborted(_ message: String) -> RPCError { RPCError(.aborted, message) }
    /// 11: a position or range past the end.
    public static func outOfRange(_ message: String) -> RPCError { RPCError(.outOfRange, message) }
    /// 12: the method is not served here.
    public static func unimplemented(_ message: String) -> RPCError { RPCError(.unimplemented, message) }
    /// 13: a bug or an unexpected failure on the server.
    public static func `internal`(_ message: String) -> RPCError { RPCError(.internal, message) }
    /// 14: the server cannot be reached now; retry later.
    public static func unavailable(_ message: String) -> RPCError { RPCError(.unavailable, message) }
    /// 4: the call's deadline passed.
    public static func deadlineExceeded(_ message: String) -> RPCError { RPCError(.deadlineExceeded, message) }
    /// 8: a limit was hit (size, concurrency).
    public static func resourceExhausted(_ message: String, retryAfterMilliseconds: UInt32 = 0) -> RPCError {
        RPCError(.resourceExhausted, message, retryAfterMilliseconds: retryAfterMilliseconds)
    }
    /// The `reason` of a RESOURCE_EXHAUSTED that means the service's disk is full.
    public static let diskFullReason = "DISK_FULL"

    /// 8 with reason DISK_FULL: the service's disk is full and nothing was stored; unlike a busy
    /// server (retry_after_ms), this lasts until an operator frees space.
    public static func diskFull(_ message: String) -> RPCError {
        RPCError(.resourceExhausted, message, reason: diskFullReason)
    }

    /// Whether this is ``diskFull(_:)``'s refusal.
    public var isDiskFull: Bool { code == .resourceExhausted && reason == Self.diskFullReason }

    /// 15: stored data is damaged.
    public static func dataLoss(_ message: String) -> RPCError { RPCError(.dataLoss, message) }
    /// 7: the caller may not do this.
    public static func permissionDenied(_ message: String) -> RPCError { RPCError(.permissionDenied, message) }
}
