import Synchronization

/// What a server has seen since it started.
public struct RPCServerStats: Sendable, Hashable {
    /// Requests read from the socket, well-formed or not.
    public var received: Int
    /// Replies handed to the socket.
    public var replied: Int
    /// Requests answered INVALID_ARGUMENT because their frames or header did not parse.
    public var malformed: Int
    /// Messages dropped without a reply (nothing to address, or the peer was gone).
    public var dropped: Int
    /// Calls answered DEADLINE_EXCEEDED.
    public var deadlineExceeded: Int
    /// Calls refused because too many were in flight.
    public var rejectedBusy: Int
    /// Mutating calls answered from the idempotency cache.
    public var replayed: Int
    /// Handlers running now.
    public var inFlight: Int
}

/// Counters bumped by the I/O thread, read by anyone.
final class Counters: Sendable {
    private let state = Mutex(RPCServerStats(
        received: 0, replied: 0, malformed: 0, dropped: 0, deadlineExceeded: 0, rejectedBusy: 0,
        replayed: 0, inFlight: 0))

    func update(_ body: (inout RPCServerStats) -> Void) { state.withLock { body(&$0) } }
    func snapshot() -> RPCServerStats { state.withLock { $0 } }
}
