import CZMQ

// Socket monitoring: libzmq publishes this socket's connection events on a PAIR socket.
extension Socket {
    /// Registers a monitor: `events` are published on a PAIR socket bound at `endpoint` (must be `inproc://`).
    ///
    /// Connect a `.pair` socket in the same context to `endpoint` and decode what it receives
    /// with `MonitorEvent(frames:)`. Events that happen before the PAIR connects are dropped.
    public func monitor(endpoint: String, events: MonitorEvents) throws {
        let socket = try live("zmq_socket_monitor(\(endpoint))")
        try check(
            zmq_socket_monitor(socket, endpoint, Int32(bitPattern: events.rawValue)),
            "zmq_socket_monitor(\(endpoint))"
        )
    }

    /// Stops the monitor started by `monitor(endpoint:events:)`; it sends `monitorStopped` last.
    public func stopMonitor() throws {
        let socket = try live("zmq_socket_monitor(stop)")
        try check(zmq_socket_monitor(socket, nil, 0), "zmq_socket_monitor(stop)")
    }
}
