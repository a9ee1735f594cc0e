import Foundation
import Proto
import Runtime
import Locking
import ZMQ

/// The client's I/O thread: owns the DEALER socket and its monitor.
extension RPCClient {
    /// The I/O thread's steps on its `SocketLoop`: sends what callers queued, resolves replies.
    final class IOLoop: SocketLoopSteps {
        let client: RPCClient
        let socket: Socket
        let monitor: Socket
        let socketIndex: Int
        let monitorIndex: Int
        /// Requests not yet accepted by the socket, oldest first.
        var unsent: [Outgoing] = []
        var lastScan: Int64 = 0
        /// Sends wait for a completed handshake: a message handed to a connection that is not up
        /// would wait in the socket for one. inproc has no monitor events and no handshake to wait for.
        var connected: Bool
        /// Why the last handshake failed, for the message of a call that found no connection.
        var handshakeTrouble: String?
        let keyAdvice: String
        /// As in the server: poll (a syscall) only after a pass that found nothing to do.
        var busy = false

        init(_ client: RPCClient, _ poller: Poller) throws {
            self.client = client
            let context = client.context, configuration = client.configuration
            socket = try Socket(context, .dealer)
            try TransportSecurity.of(context)?.secureClient(socket)
            // Not ZMQ_IMMEDIATE: with it, libzmq 4.3 ends the pipe of a dropped connection at once
            // (`socket_base_t::hiccuped`) and discards the replies that reached the socket but were
            // not read yet, such as a stopping server's last answers. Requests are held here
            // instead until a handshake succeeds (`connected`), and what a dropped connection
            // still queued is discarded by `reconnect()`.
            try socket.setMaxMessageSize(Int64(configuration.maxMessageBytes) + 64 * 1024)
            try socket.setReconnectInterval(configuration.reconnectMilliseconds.first, max: configuration.reconnectMilliseconds.max)
            try socket.setHeartbeat(
                interval: configuration.heartbeatInterval, timeout: configuration.heartbeatTimeout,
                ttl: configuration.heartbeatTimeout)
            try socket.setSendHighWaterMark(100_000)
            try socket.setReceiveHighWaterMark(100_000)
            try socket.monitor(endpoint: client.monitorEndpoint, events: [
                .handshakeSucceeded, .disconnected, .connected,
                .handshakeFailedAuth, .handshakeFailedProtocol, .handshakeFailedNoDetail,
            ])
            monitor = try Socket(context, .pair)
            try monitor.connect(client.monitorEndpoint)
            try socket.connect(client.endpoint)
            socketIndex = poller.add(socket, events: .in)
            monitorIndex = poller.add(monitor, events: .in)
            connected = client.endpoint.hasPrefix("inproc://")
            keyAdvice = TransportSecurity.of(context)?.client == nil
                ? "the server may require CURVE keys (--client-secret-key and --server-key)"
                : "check --server-key is the server's public key"
            if connected { client.shared.withLock { $0.connected = true } }
        }

        func pollTimeout() -> Int? {
            if !busy && client.ioExecutor.hasJobs { busy = true }
            if busy { return nil }
            let idle = unsent.isEmpty && client.shared.withLock { $0.pending.isEmpty }
            return unsent.isEmpty ? (idle ? 1000 : 10) : 5
        }

        // A failed poll is ETERM (the context is shutting down): pending calls end as cancelled in `drain`.

        func turn(_ polled: Poller?) -> Bool {
            let socketReadable = polled?.revents(socketIndex).contains(.in) ?? true
            let monitorReadable = polled?.revents(monitorIndex).contains(.in) ?? true
            let ioExecutor = client.ioExecutor, endpoint = client.endpoint
            if client.shared.withLock({ $0.closing }) { return false }
            // Tasks running here (``executor``): each runs until it awaits its next call.
            let ranJobs = ioExecutor.runJobs()
            let (closing, cancelled, queued) = client.shared.withLock { state -> (Bool, [UInt64], [Outgoing]) in
                defer {
                    state.cancelled.removeAll()
                    state.outbox.removeAll(keepingCapacity: true)
                }
                return (state.closing, state.cancelled, state.outbox)
            }
            if closing { return false }
            unsent.append(contentsOf: queued)
            if !cancelled.isEmpty {
                let gone = Set(cancelled)
                unsent.removeAll { gone.contains($0.id) }
                for id in cancelled { client.resolve(id, .cancelled) }
            }

            // Replies first: they free the server's slots.
            let replies = socketReadable ? client.receiveReplies(socket) : []
            if socketReadable {
                client.resolve(replies)
                // Tasks waiting here for these replies go on at once, and what they send next
                // is sent in this pass.
                if ioExecutor.runJobs() {
                    unsent.append(contentsOf: client.shared.withLock { state -> [Outgoing] in
                        defer { state.outbox.removeAll(keepingCapacity: true) }
                        return state.outbox
                    })
                }
            }
            if monitorReadable {
                while let frames = try? monitor.receive(dontWait: true) {
                    guard let event = MonitorEvent(frames: frames) else { continue }
                    if event.event == .handshakeFailedAuth {
                        handshakeTrouble = "the server refused this client's key (ZAP): is its public key in the server's allowed keys?"
                    } else if event.event == .handshakeFailedProtocol || event.event == .handshakeFailedNoDetail {
                        handshakeTrouble = "the handshake failed: \(keyAdvice)"
                    }
                    if event.event == .handshakeSucceeded {
                        handshakeTrouble = nil
                        connected = true
                        client.shared.withLock { $0.connected = true }
                    } else if event.event == .disconnected {
                        if !connected && handshakeTrouble == nil {
                            handshakeTrouble = "the server closed the connection during the handshake: \(keyAdvice)"
                        }
                        connected = false
                        client.shared.withLock { $0.connected = false }
                        // Replies the server sent before it closed are already in the socket,
                        // though the poll that brought this event may not have shown them yet
                        // (two channels): take them before failing what is still unanswered.
                        client.resolve(client.receiveReplies(socket))
                        let lost = client.failSent("connection to \(endpoint) was lost before the reply")
                        // Only then can the socket hold a request of the old connection; a
                        // handshake refused over and over is left to libzmq's reconnect backoff.
                        if lost > 0 { reconnect() }
                    }
                }
            }
            // Send in order; EAGAIN means no connected server (ZMQ_IMMEDIATE) or a full queue.
            var sentCount = 0
            for outgoing in unsent where connected {
                guard (try? socket.send(outgoing.message, dontWait: true)) == true else { break }
                sentCount += 1
            }
            if sentCount > 0 {
                let sent = unsent.prefix(sentCount)
                client.shared.withLock { state in
                    for outgoing in sent { state.pending[outgoing.id]?.sent = true }
                }
                unsent.removeFirst(sentCount)
            }
            busy = !replies.isEmpty || sentCount > 0 || !queued.isEmpty || ranJobs

            let now = monotonicMilliseconds()
            if now - lastScan >= 5 {
                lastScan = now
                // Never sent within the connect wait: the call fails and will not be sent later.
                let late = unsent.filter { $0.sendBy <= now }
                if !late.isEmpty {
                    unsent.removeAll { $0.sendBy <= now }
                    let why = "no connection to \(endpoint) within \(client.configuration.connectWaitMilliseconds) ms; "
                        + (handshakeTrouble ?? "is the service running?")
                    for outgoing in late { client.resolve(outgoing.id, .notSent(why)) }
                }
                client.expire(now: now)
            }
            return true
        }

        /// Starts a new connection in place of the dropped one, after its replies were read:
        /// requests the old one still queued are discarded with it rather than sent once the
        /// server is back, after their calls were failed as lost (they may have run, but never
        /// later than that).
        private func reconnect() {
            // Only a context being ended fails these (ETERM), and the loop ends with it. Never
            // two connections: libzmq ignores a DEALER's connect to an endpoint it still holds.
            try? socket.disconnect(client.endpoint)
            try? socket.connect(client.endpoint)
        }

        func drain() {
            let all = client.shared.withLock { state -> [Pending] in
                defer { state.pending.removeAll() }
                return Array(state.pending.values)
            }
            for pending in all { pending.continuation.resume(returning: .cancelled) }
            _ = try? socket.stopMonitor()
            monitor.close()
            socket.close()
            // From now on the executor's jobs run on the global executor.
            client.ioExecutor.stop()
        }
    }

    private func resolve(_ id: UInt64, _ outcome: Outcome) {
        let pending = shared.withLock { $0.pending.removeValue(forKey: id) }
        pending?.continuation.resume(returning: outcome)
    }

    /// Resolves a batch of replies with one lock.
    private func resolve(_ replies: [(UInt64, Outcome)]) {
        guard !replies.isEmpty else { return }
        let ready = shared.withLock { state in
            replies.compactMap { id, outcome in state.pending.removeValue(forKey: id).map { ($0, outcome) } }
        }
        for (pending, outcome) in ready { pending.continuation.resume(returning: outcome) }
    }

    /// The replies waiting in the socket now, as request ids and outcomes.
    private func receiveReplies(_ socket: Socket) -> [(UInt64, Outcome)] {
        var replies: [(UInt64, Outcome)] = []
        while let frames = try? socket.receiveFrames(dontWait: true) {
            if let reply = parseReply(frames) { replies.append(reply) }
        }
        return replies
    }

    /// The request id and outcome of a reply; nil for anything that is not a reply of this protocol.
    private func parseReply(_ frames: [Frame]) -> (UInt64, Outcome)? {
        guard frames.count == 3, frames[0].isEmpty,
            let header = try? ResponseHeader(frame: frames[1], options: Envelope.headerLimit)
        else { return nil }
        return (header.requestId, .reply(RawReply(
            code: StatusCode(rawValue: header.code), message: header.message,
            retryAfterMilliseconds: header.retryAfterMs, reason: header.reason, bodyFrame: frames[2])))
    }

    /// Fails the calls sent and not answered yet; how many there were.
    @discardableResult
    private func failSent(_ why: String) -> Int {
        let lost = shared.withLock { state -> [Pending] in
            let ids = state.pending.filter { $0.value.sent }.map(\.key)
            return ids.compactMap { state.pending.removeValue(forKey: $0) }
        }
        for pending in lost { pending.continuation.resume(returning: .lost(why)) }
        return lost.count
    }

    private func expire(now: Int64) {
        let expired = shared.withLock { state -> [(Pending, Outcome)] in
            var out: [(Pending, Outcome)] = []
            for (id, pending) in state.pending {
                if pending.sent, now >= pending.deadline {
                    out.append((pending, .timedOut))
                    state.pending[id] = nil
                }
            }
            return out
        }
        for (pending, outcome) in expired { pending.continuation.resume(returning: outcome) }
    }
}
