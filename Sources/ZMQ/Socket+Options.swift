import CZMQ

// Typed setters and getters over zmq_setsockopt / zmq_getsockopt.
extension Socket {
    /// How long unsent messages are kept after close, in ms (-1 forever, 0 discard; default here 0).
    public func setLinger(milliseconds: Int32) throws {
        try setOption(ZMQ_LINGER, milliseconds, "ZMQ_LINGER")
    }

    /// The current ZMQ_LINGER in ms.
    public var linger: Int32 {
        get throws { try option(ZMQ_LINGER, Int32.self, "ZMQ_LINGER") }
    }

    /// ROUTER only: sending to an unknown routing id fails with `EHOSTUNREACH` instead of being dropped.
    public func setRouterMandatory(_ on: Bool) throws {
        try setOption(ZMQ_ROUTER_MANDATORY, Int32(on ? 1 : 0), "ZMQ_ROUTER_MANDATORY")
    }

    /// Largest inbound message in bytes (ZMQ_MAXMSGSIZE, -1 = no limit); a peer exceeding it is disconnected.
    public func setMaxMessageSize(_ bytes: Int64) throws {
        try setOption(ZMQ_MAXMSGSIZE, bytes, "ZMQ_MAXMSGSIZE")
    }

    /// The current ZMQ_MAXMSGSIZE in bytes (-1 = no limit).
    public var maxMessageSize: Int64 {
        get throws { try option(ZMQ_MAXMSGSIZE, Int64.self, "ZMQ_MAXMSGSIZE") }
    }

    /// Outbound queue limit per peer, in messages (ZMQ_SNDHWM, 0 = none).
    public func setSendHighWaterMark(_ n: Int32) throws {
        try setOption(ZMQ_SNDHWM, n, "ZMQ_SNDHWM")
    }

    /// The current ZMQ_SNDHWM.
    public var sendHighWaterMark: Int32 {
        get throws { try option(ZMQ_SNDHWM, Int32.self, "ZMQ_SNDHWM") }
    }

    /// Inbound queue limit per peer, in messages (ZMQ_RCVHWM, 0 = none).
    public func setReceiveHighWaterMark(_ n: Int32) throws {
        try setOption(ZMQ_RCVHWM, n, "ZMQ_RCVHWM")
    }

    /// The current ZMQ_RCVHWM.
    public var receiveHighWaterMark: Int32 {
        get throws { try option(ZMQ_RCVHWM, Int32.self, "ZMQ_RCVHWM") }
    }

    /// ZMTP heartbeats, all in ms: ping every `interval`, drop after `timeout` silence, ask peers for `ttl`.
    public func setHeartbeat(interval: Int32, timeout: Int32, ttl: Int32) throws {
        try setOption(ZMQ_HEARTBEAT_IVL, interval, "ZMQ_HEARTBEAT_IVL")
        try setOption(ZMQ_HEARTBEAT_TIMEOUT, timeout, "ZMQ_HEARTBEAT_TIMEOUT")
        try setOption(ZMQ_HEARTBEAT_TTL, ttl, "ZMQ_HEARTBEAT_TTL")
    }

    /// How long a new connection may take to finish its ZMTP handshake (security included)
    /// before it is closed, in ms (ZMQ_HANDSHAKE_IVL; 0 = forever, libzmq's default 30 s).
    public func setHandshakeInterval(milliseconds: Int32) throws {
        try setOption(ZMQ_HANDSHAKE_IVL, milliseconds, "ZMQ_HANDSHAKE_IVL")
    }

    /// Reconnect backoff in ms: start at `ms`, double up to `max` (0 = no backoff).
    public func setReconnectInterval(_ ms: Int32, max: Int32) throws {
        try setOption(ZMQ_RECONNECT_IVL, ms, "ZMQ_RECONNECT_IVL")
        try setOption(ZMQ_RECONNECT_IVL_MAX, max, "ZMQ_RECONNECT_IVL_MAX")
    }

    /// Queue messages only to completed connections (ZMQ_IMMEDIATE).
    public func setImmediate(_ on: Bool) throws {
        try setOption(ZMQ_IMMEDIATE, Int32(on ? 1 : 0), "ZMQ_IMMEDIATE")
    }

    /// The identity a ROUTER peer sees for this socket (1...255 bytes, must not start with 0); set before connect.
    public func setRoutingID(_ id: [UInt8]) throws {
        try setOption(ZMQ_ROUTING_ID, bytes: id, "ZMQ_ROUTING_ID")
    }

    /// The current ZMQ_ROUTING_ID (empty when libzmq will generate one).
    public var routingID: [UInt8] {
        get throws { try bytesOption(ZMQ_ROUTING_ID, capacity: 256, "ZMQ_ROUTING_ID") }
    }

    /// Blocking sends give up after `ms` with an `isAgain` error (-1 = wait forever).
    public func setSendTimeout(_ ms: Int32) throws {
        try setOption(ZMQ_SNDTIMEO, ms, "ZMQ_SNDTIMEO")
    }

    /// Blocking receives give up after `ms` with an `isAgain` error (-1 = wait forever).
    public func setReceiveTimeout(_ ms: Int32) throws {
        try setOption(ZMQ_RCVTIMEO, ms, "ZMQ_RCVTIMEO")
    }

    /// SUB only: receive messages whose first frame starts with `prefix` (empty = everything).
    public func subscribe(_ prefix: [UInt8]) throws {
        try setOption(ZMQ_SUBSCRIBE, bytes: prefix, "ZMQ_SUBSCRIBE")
    }

    /// SUB only: remove one earlier `subscribe` of `prefix`.
    public func unsubscribe(_ prefix: [UInt8]) throws {
        try setOption(ZMQ_UNSUBSCRIBE, bytes: prefix, "ZMQ_UNSUBSCRIBE")
    }

    /// On connect, send an empty message so a ROUTER peer learns this socket's routing id.
    public func setProbeRouter(_ on: Bool) throws {
        try setOption(ZMQ_PROBE_ROUTER, Int32(on ? 1 : 0), "ZMQ_PROBE_ROUTER")
    }

    /// The endpoint of the last bind or connect, with wildcards resolved (e.g. `tcp://127.0.0.1:41234`).
    public var lastEndpoint: String {
        get throws {
            let bytes = try bytesOption(ZMQ_LAST_ENDPOINT, capacity: 256, "ZMQ_LAST_ENDPOINT")
            // libzmq includes the terminating NUL in the returned length.
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// True while the part just received is followed by more parts of the same message.
    var hasMore: Bool {
        get throws { try option(ZMQ_RCVMORE, Int32.self, "ZMQ_RCVMORE") != 0 }
    }

    /// Sets an integer option of exactly `T`'s size (int or int64_t in libzmq).
    private func setOption<T: FixedWidthInteger>(_ name: Int32, _ value: T, _ label: String) throws(ZMQError) {
        let socket = try live("zmq_setsockopt(\(label))")
        var value = value
        try check(zmq_setsockopt(socket, name, &value, MemoryLayout<T>.size), "zmq_setsockopt(\(label), \(value))")
    }

    /// Sets a binary option.
    private func setOption(_ name: Int32, bytes: [UInt8], _ label: String) throws(ZMQError) {
        let socket = try live("zmq_setsockopt(\(label))")
        // An empty array may have no base address; give libzmq a valid pointer with length 0.
        var empty: UInt8 = 0
        let rc = bytes.isEmpty
            ? zmq_setsockopt(socket, name, &empty, 0)
            : bytes.withUnsafeBytes { zmq_setsockopt(socket, name, $0.baseAddress, $0.count) }
        try check(rc, "zmq_setsockopt(\(label), \(bytes.count) bytes)")
    }

    /// Reads an integer option of exactly `T`'s size.
    private func option<T: FixedWidthInteger>(_ name: Int32, _: T.Type, _ label: String) throws(ZMQError) -> T {
        let socket = try live("zmq_getsockopt(\(label))")
        var value: T = 0
        var size = MemoryLayout<T>.size
        try check(zmq_getsockopt(socket, name, &value, &size), "zmq_getsockopt(\(label))")
        return value
    }

    /// Reads a binary or string option, growing the buffer while libzmq reports it too small.
    private func bytesOption(_ name: Int32, capacity: Int, _ label: String) throws(ZMQError) -> [UInt8] {
        let socket = try live("zmq_getsockopt(\(label))")
        var capacity = capacity
        while true {
            var buffer = [UInt8](repeating: 0, count: capacity)
            var size = capacity
            let rc = buffer.withUnsafeMutableBytes { zmq_getsockopt(socket, name, $0.baseAddress, &size) }
            // EINVAL here means the buffer was too small (e.g. a long ipc:// path).
            if rc == -1 && zmq_errno() == EINVAL && capacity < 1 << 16 {
                capacity *= 4
                continue
            }
            try check(rc, "zmq_getsockopt(\(label))")
            return Array(buffer.prefix(size))
        }
    }
}
