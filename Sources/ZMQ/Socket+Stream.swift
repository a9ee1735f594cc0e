import CZMQ

// ZMQ_STREAM: plain TCP peers, each known by the routing id libzmq gave its connection.
extension Socket {
    /// STREAM only: deliver `[routing id, empty]` when a peer connects and again when it
    /// disconnects, so connections can be tracked (ZMQ_STREAM_NOTIFY; libzmq's default is on).
    public func setStreamNotify(_ on: Bool) throws {
        let socket = try live("zmq_setsockopt(ZMQ_STREAM_NOTIFY)")
        var value: Int32 = on ? 1 : 0
        try check(zmq_setsockopt(socket, ZMQ_STREAM_NOTIFY, &value, MemoryLayout<Int32>.size), "zmq_setsockopt(ZMQ_STREAM_NOTIFY, \(value))")
    }

    /// STREAM only: writes `bytes` to the peer `routingID`, never blocking.
    ///
    /// Returns false when the peer's queue is full (EAGAIN); throws `EHOSTUNREACH` when the peer
    /// is gone.
    @discardableResult
    public func sendStream(to routingID: [UInt8], _ bytes: [UInt8]) throws -> Bool {
        precondition(!bytes.isEmpty, "an empty frame closes a STREAM connection: use closeStream(_:)")
        return try send([routingID, bytes], dontWait: true)
    }

    /// STREAM only: closes the connection of `routingID` (its routing id, then an empty frame);
    /// bytes queued for it before are written first.
    public func closeStream(_ routingID: [UInt8]) throws {
        try send([routingID, []], dontWait: true)
    }
}
