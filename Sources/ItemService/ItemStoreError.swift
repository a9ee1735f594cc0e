import Proto
import RPC

/// What the item store refuses, each case with a message that names the field and the value,
/// and answered with the status code its case names.
public enum ItemStoreError: RPCStatusError, Equatable, Sendable, CustomStringConvertible {
    /// A bad field or value, whatever the stored state (INVALID_ARGUMENT).
    case invalidArgument(String)
    /// No item (or attached photo) with that key (NOT_FOUND).
    case notFound(String)
    /// An index past the end of the list (OUT_OF_RANGE).
    case outOfRange(String)
    /// A stale expected_version (ABORTED).
    case aborted(String)
    /// The stored state does not allow the change (FAILED_PRECONDITION).
    case failedPrecondition(String)
    /// The store was closed (the service is stopping).
    case closed

    public var description: String {
        switch self {
        case let .invalidArgument(message), let .notFound(message), let .outOfRange(message),
            let .aborted(message), let .failedPrecondition(message):
            message
        case .closed: "the item store is closed"
        }
    }

    public var rpcStatus: StatusCode {
        switch self {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .outOfRange: .outOfRange
        case .aborted: .aborted
        case .failedPrecondition: .failedPrecondition
        case .closed: .unavailable
        }
    }

    public var rpcMessage: String {
        switch self {
        case .closed: "item-service is stopping"
        default: description
        }
    }
}
