import CZMQ

/// Readiness conditions for `Poller` (the `ZMQ_POLL*` bits).
public struct PollEvents: OptionSet, Sendable, Hashable {
    /// The `ZMQ_POLL*` bits.
    public let rawValue: Int16

    /// Wraps `ZMQ_POLL*` bits.
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// A message can be received (socket) or the fd is readable.
    public static let `in` = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// A message can be sent (socket) or the fd is writable.
    public static let out = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// An error condition on a plain fd (never set for zmq sockets).
    public static let err = PollEvents(rawValue: Int16(ZMQ_POLLERR))
}
