import CZMQ

/// The libzmq socket patterns this wrapper supports.
public enum SocketType: Sendable {
    /// Exclusive pair (used for monitor sockets and inproc signalling).
    case pair
    /// Publisher: fans messages out to subscribers.
    case pub
    /// Subscriber: receives the publisher messages matching its subscriptions.
    case sub
    /// Strict request side of request/reply.
    case req
    /// Strict reply side of request/reply.
    case rep
    /// Asynchronous request side: load-balances sends, fair-queues receives.
    case dealer
    /// Asynchronous reply side: prefixes each message with the sending peer's routing id.
    case router
    /// Pipeline receiver.
    case pull
    /// Pipeline sender.
    case push
    /// Raw TCP: each message is a peer's routing id then bytes as they came (no ZMTP); send
    /// the routing id then bytes to write them, or then an empty frame to close the connection.
    case stream

    /// The `ZMQ_*` constant for `zmq_socket`.
    var rawValue: Int32 {
        switch self {
        case .pair: ZMQ_PAIR
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pull: ZMQ_PULL
        case .push: ZMQ_PUSH
        case .stream: ZMQ_STREAM
        }
    }
}
