import Proto
import RPC

/// Why the job store refused a call; each case says its status, and the message names the
/// job, field or queue concerned.
public enum JobStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// 5 NOT_FOUND: no such job, batch or queue.
    case notFound(String)
    /// 3 INVALID_ARGUMENT: a field out of its range or malformed.
    case invalidArgument(String)
    /// 9 FAILED_PRECONDITION: a stale lease (the job was leased again, finished, or given
    /// back); nothing was changed.
    case staleLease(String)

    public var description: String { rpcMessage }

    /// NOT_FOUND for a queue not served here, naming those that are.
    public static func unknownQueue(_ queue: String, served: some Sequence<String>) -> JobStoreError {
        .notFound("queue \"\(queue)\" is not served here; this endpoint serves: \(served.sorted().joined(separator: ", "))")
    }
}

extension JobStoreError: RPCStatusError {
    public var rpcStatus: StatusCode {
        switch self {
        case .notFound: .notFound
        case .invalidArgument: .invalidArgument
        case .staleLease: .failedPrecondition
        }
    }

    public var rpcMessage: String {
        switch self {
        case .notFound(let message), .invalidArgument(let message), .staleLease(let message): message
        }
    }
}
