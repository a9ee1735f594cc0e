import CZMQ

/// A set of socket monitor events (the `ZMQ_EVENT_*` bits).
public struct MonitorEvents: OptionSet, Sendable, Hashable {
    /// The `ZMQ_EVENT_*` bits.
    public let rawValue: UInt32

    /// Wraps `ZMQ_EVENT_*` bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A connect completed (value: the new fd).
    public static let connected = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_CONNECTED))
    /// A connect is pending (value: errno).
    public static let connectDelayed = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_CONNECT_DELAYED))
    /// A reconnect was scheduled (value: the interval in ms).
    public static let connectRetried = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_CONNECT_RETRIED))
    /// A bind succeeded (value: the listening fd).
    public static let listening = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_LISTENING))
    /// A bind failed (value: errno).
    public static let bindFailed = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_BIND_FAILED))
    /// A connection was accepted on a bound endpoint (value: the new fd).
    public static let accepted = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_ACCEPTED))
    /// Accepting a connection failed (value: errno).
    public static let acceptFailed = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_ACCEPT_FAILED))
    /// A listening socket was closed (value: the fd).
    public static let closed = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_CLOSED))
    /// Closing a socket failed (value: errno).
    public static let closeFailed = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_CLOSE_FAILED))
    /// A session's connection was broken (value: the fd).
    public static let disconnected = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_DISCONNECTED))
    /// The monitor was stopped (socket closed or `stopMonitor`); the last event, sent only if requested.
    public static let monitorStopped = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_MONITOR_STOPPED))
    /// The ZMTP handshake failed before authentication (value: errno).
    public static let handshakeFailedNoDetail = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL))
    /// The ZMTP handshake completed; the peer can now exchange messages (value: 0).
    public static let handshakeSucceeded = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
    /// The ZMTP handshake failed on a protocol error (value: a ZMQ_PROTOCOL_ERROR_* code).
    public static let handshakeFailedProtocol = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
    /// The ZMTP handshake failed authentication (value: the ZAP status code).
    public static let handshakeFailedAuth = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
    /// Every event (`ZMQ_EVENT_ALL`).
    public static let all = MonitorEvents(rawValue: UInt32(ZMQ_EVENT_ALL))
}
