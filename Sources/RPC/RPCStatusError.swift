import Proto

/// An error that says how a call it ends is answered: the server replies with its status,
/// message and retry hint, whatever handler threw it (hummingbird's `HTTPResponseError`).
///
/// Conform an error where it is defined when its cases are refusals a caller can act on (a
/// store's `NotFound`, a stale version); any other error a handler throws is answered
/// 13 INTERNAL and logged.
public protocol RPCStatusError: Error {
    /// The status code the caller gets.
    var rpcStatus: StatusCode { get }
    /// The message the caller gets: names the bad field or value, or what to do.
    var rpcMessage: String { get }
    /// When non-zero, the earliest moment a retry makes sense (`retry_after_ms`).
    var rpcRetryAfterMilliseconds: UInt32 { get }
    /// Which of the status's causes it was (`reason`, e.g. `RPCError.diskFullReason`); empty
    /// when the status says it all.
    var rpcReason: String { get }
}

extension RPCStatusError {
    /// No retry hint.
    public var rpcRetryAfterMilliseconds: UInt32 { 0 }
    /// No reason beyond the status.
    public var rpcReason: String { "" }
}

extension RPCError: RPCStatusError {
    public var rpcStatus: StatusCode { code }
    public var rpcMessage: String { message }
    public var rpcRetryAfterMilliseconds: UInt32 { retryAfterMilliseconds }
    public var rpcReason: String { reason }
}
