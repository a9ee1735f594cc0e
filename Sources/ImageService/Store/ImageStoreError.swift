import Proto
import RPC

/// Why a store operation was refused; a call it ends is answered the status code its case names.
public enum ImageStoreError: RPCStatusError, Equatable, CustomStringConvertible {
    /// What work handed to a closed (stopping) store is answered.
    static let closed = ImageStoreError.failedPrecondition("the image store is closed (stopping)")

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
    /// DATA_LOSS.
    case damaged(String)
    /// UNAVAILABLE: the disk failed; a retry later may succeed.
    case unavailable(String)
    /// DEADLINE_EXCEEDED: the caller's deadline passed before the work started.
    case deadlineExceeded(String)

    /// The message sent to the client.
    public var description: String {
        switch self {
        case .invalid(let m), .notFound(let m), .outOfRange(let m), .failedPrecondition(let m),
             .alreadyExists(let m), .aborted(let m), .tooLarge(let m), .damaged(let m), .unavailable(let m),
             .deadlineExceeded(let m): m
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
        case .tooLarge: .resourceExhausted
        case .damaged: .dataLoss
        case .unavailable: .unavailable
        case .deadlineExceeded: .deadlineExceeded
        }
    }

    public var rpcMessage: String { description }
}
