#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CZMQ

/// A failed libzmq call: the errno it left and the call that failed.
public struct ZMQError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The `zmq_errno()` value at the failure (a POSIX errno or a libzmq code such as `ETERM`).
    public let code: Int32
    /// The call that failed, e.g. `zmq_bind(tcp://127.0.0.1:5551)`.
    public let operation: String

    /// Creates an error for `operation` failing with `code`.
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// The operation followed by libzmq's text for the code.
    public var description: String {
        // zmq_strerror falls back to strerror for plain POSIX codes, so it covers both kinds.
        "\(operation): \(String(cString: zmq_strerror(code))) (errno \(code))"
    }

    /// True when the call would have blocked (`EAGAIN`), e.g. a send/receive timeout expired.
    public var isAgain: Bool { code == EAGAIN }

    /// True when the context was shut down or terminated (`ETERM`); the socket should be closed.
    public var isTerminated: Bool { code == ETERM }

    /// True when a ROUTER_MANDATORY socket was asked to route to an unknown peer (`EHOSTUNREACH`).
    public var isHostUnreachable: Bool { code == EHOSTUNREACH }
}

/// Throws a `ZMQError` carrying `zmq_errno()` when a libzmq call returned -1; otherwise returns `rc`.
@discardableResult
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(ZMQError) -> Int32 {
    // Every libzmq int-returning call signals failure with exactly -1; other values
    // (byte counts, ready counts) are results the caller may want.
    guard rc == -1 else { return rc }
    throw ZMQError(code: zmq_errno(), operation: operation())
}

/// Runs a libzmq call again while it fails with `EINTR`, returning its final result unchecked.
func retryingInterrupts(_ call: () -> Int32) -> Int32 {
    // A signal delivered to this thread interrupts blocking zmq calls; nothing was
    // transferred in that case, so repeating the call is always correct.
    while true {
        let rc = call()
        if rc == -1 && zmq_errno() == EINTR { continue }
        return rc
    }
}
