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
    /// Calls refused because too many calls, or too many bytes of requests, were in flight.
    public var rejectedBusy: Int
    /// Mutating calls answered from the idempotency cache.
    public var replayed: Int
    /// Messages dropped unanswered because their CURVE key is not (or no longer) allowed.
    public var unauthenticated: Int = 0
    /// Calls answered PERMISSION_DENIED: the key's role may not call the method.
    public var permissionDenied: Int = 0
    /// Handlers running now.
    public var inFlight: Int
    /// Bytes of request bodies the handlers running now hold.
    public var inFlightBytes: Int
}

/// Counters bumped by the I/O thread (relaxed atomics: cheap on the hot path), read by anyone.
final class Counters: Sendable {
    let received = Atomic<Int>(0)
    let replied = Atomic<Int>(0)
    let malformed = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
    let deadlineExceeded = Atomic<Int>(0)
    let rejectedBusy = Atomic<Int>(0)
    let replayed = Atomic<Int>(0)
    let unauthenticated = Atomic<Int>(0)
    let permissionDenied = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    let inFlightBytes = Atomic<Int>(0)

    func snapshot() -> RPCServerStats {
        RPCServerStats(
            received: received.load(ordering: .relaxed), replied: replied.load(ordering: .relaxed),
            malformed: malformed.load(ordering: .relaxed), dropped: dropped.load(ordering: .relaxed),
            deadlineExceeded: deadlineExceeded.load(ordering: .relaxed),
            rejectedBusy: rejectedBusy.load(ordering: .relaxed), replayed: replayed.load(ordering: .relaxed),
            unauthenticated: unauthenticated.load(ordering: .relaxed),
            permissionDenied: permissionDenied.load(ordering: .relaxed),
            inFlight: inFlight.load(ordering: .relaxed), inFlightBytes: inFlightBytes.load(ordering: .relaxed))
    }
}

extension Atomic where Value == Int {
    /// Adds one (relaxed).
    func bump() { wrappingAdd(1, ordering: .relaxed) }
}
