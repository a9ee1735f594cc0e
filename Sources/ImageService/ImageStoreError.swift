import Proto
import RPC

/// Why a store operation was refused; a call it ends is answered the status code its case names.
public enum ImageStoreError: RPCStatusError, Equatable, CustomStringConvertible {
    /// INVALID_ARGUMENT.
    case invalid(String)
    /// NOT_FOUND.
    case notFound(String)
    /// OUT_OF_RANGE.
    case outOfRange(String)
    /// FAILED_PRECONDITION.
    case failedPrecondition(String)
    /// ALREADY_EXISTS.
    case alreadyExists(String)
    /// ABORTED.
    case aborted(String)
    /// RESOURCE_EXHAUSTED.
    case tooLarge(String)
    /// RESOURCE_EXHAUSTED with reason DISK_FULL (`RPCError.diskFullReason`): the store's disk
    /// is full and nothing was stored; a retry works once space is freed.
    case diskFull(String)
    /// DATA_LOSS.
    case damaged(String)

    /// The message sent to the client.
    public var description: String {
        switch self {
        case .invalid(let m), .notFound(let m), .outOfRange(let m), .failedPrecondition(let m),
             .alreadyExists(let m), .aborted(let m), .tooLarge(let m), .diskFull(let m), .damaged(let m): m
        }
    }

    public var rpcStatus: StatusCode {
        switch self {
        case .invalid: .invalidArgument
        case .notFound: .notFound
        case .outOfRange: .outOfRange
        case .failedPrecondition: .failedPrecondition
        case .alreadyExists: .alreadyExists
        case .aborted: .aborted
        case .tooLarge, .diskFull: .resourceExhausted
        case .damaged: .dataLoss
        }
    }

    public var rpcReason: String {
        if case .diskFull = self { RPCError.diskFullReason } else { "" }
    }

    public var rpcMessage: String { description }
}
