import Proto

/// The server's admission limits: while draining only inline calls (Health/Check) are taken, and
/// the calls and request bytes in flight are bounded in all and per peer. Pure decisions over
/// numbers the I/O thread passes in; nothing here knows about sockets or counters.
///
/// Two checks, because an idempotent replay sits between them (`RPCServer.admit`): `stopping`
/// comes before the idempotency gate (a draining server replays nothing), `capacity` after it (a
/// replay costs nothing, so it is answered even when the server is full).
struct AdmissionLimits: Sendable, Equatable {
    /// Named in the draining refusal.
    var processName: String
    /// Calls in flight (waiters on a running idempotency key included), in all and per peer.
    var maxInFlight: Int
    var maxInFlightPerPeer: Int
    /// Request bytes in flight, in all and per peer.
    var maxInFlightBytes: Int
    var maxInFlightBytesPerPeer: Int

    init(processName: String, maxInFlight: Int, maxInFlightPerPeer: Int, maxInFlightBytes: Int, maxInFlightBytesPerPeer: Int) {
        self.processName = processName
        self.maxInFlight = maxInFlight
        self.maxInFlightPerPeer = maxInFlightPerPeer
        self.maxInFlightBytes = maxInFlightBytes
        self.maxInFlightBytesPerPeer = maxInFlightBytesPerPeer
    }

    init(_ configuration: RPCServer.Configuration) {
        self.init(
            processName: configuration.processName, maxInFlight: configuration.maxInFlight,
            maxInFlightPerPeer: configuration.maxInFlightPerPeer, maxInFlightBytes: configuration.maxInFlightBytes,
            maxInFlightBytesPerPeer: configuration.maxInFlightBytesPerPeer)
    }

    /// What is in flight when a call arrives: in all, and of the caller's peer.
    struct Load: Sendable, Equatable {
        /// Calls running plus callers waiting on a running idempotency key.
        var calls: Int
        var bytes: Int
        var peerCalls: Int
        var peerBytes: Int

        init(calls: Int = 0, bytes: Int = 0, peerCalls: Int = 0, peerBytes: Int = 0) {
            self.calls = calls
            self.bytes = bytes
            self.peerCalls = peerCalls
            self.peerBytes = peerBytes
        }
    }

    /// Why a call is not taken: the status, message and retry hint its caller is told.
    struct Refusal: Sendable, Equatable {
        var code: StatusCode
        var message: String
        var retryAfterMilliseconds: UInt32
        /// Counted as `rejectedBusy` (every capacity refusal; not the draining one).
        var busy: Bool
    }

    /// The retry hint of a busy refusal.
    static let busyRetryAfterMilliseconds: UInt32 = 50

    /// Refuses a call while the server stops; Health/Check (inline) still answers: it says NOT_SERVING.
    func stopping(draining: Bool, inline: Bool) -> Refusal? {
        guard draining && !inline else { return nil }
        return Refusal(
            code: .unavailable, message: "\(processName) is stopping and takes no new calls; retry later",
            retryAfterMilliseconds: 0, busy: false)
    }

    /// Refuses a call that would pass a limit, checked in this order: calls in all; then, unless
    /// the call only waits on a running idempotency key (it holds no bytes and no peer's share),
    /// bytes in all, the peer's calls and the peer's bytes. A byte limit never refuses the first
    /// call when nothing is in flight, however large (else it could never run).
    func capacity(_ load: Load, requestBytes bytes: Int, waiting: Bool = false) -> Refusal? {
        guard load.calls < maxInFlight else {
            return busy("server busy: \(maxInFlight) calls in flight")
        }
        if waiting { return nil }
        guard load.bytes == 0 || load.bytes + bytes <= maxInFlightBytes else {
            return busy(
                "server busy: \(load.bytes) bytes of requests in flight; this one (\(bytes) bytes) would pass the limit of \(maxInFlightBytes)")
        }
        // One peer may not take what the others need: its own share of calls and bytes.
        guard load.peerCalls < maxInFlightPerPeer else {
            return busy(
                "this client has \(load.peerCalls) calls in flight, the most one peer may have (\(maxInFlightPerPeer) of \(maxInFlight)); retry once some have finished")
        }
        guard load.peerBytes == 0 || load.peerBytes + bytes <= maxInFlightBytesPerPeer else {
            return busy(
                "this client has \(load.peerBytes) bytes of requests in flight; this one (\(bytes) bytes) would pass one peer's limit of \(maxInFlightBytesPerPeer)")
        }
        return nil
    }

    /// Both checks in their order, for a call with no idempotency key to look up in between.
    func admit(_ load: Load, requestBytes: Int, draining: Bool, inline: Bool, waiting: Bool = false) -> Refusal? {
        stopping(draining: draining, inline: inline) ?? capacity(load, requestBytes: requestBytes, waiting: waiting)
    }

    private func busy(_ message: String) -> Refusal {
        Refusal(code: .resourceExhausted, message: message, retryAfterMilliseconds: Self.busyRetryAfterMilliseconds, busy: true)
    }
}
