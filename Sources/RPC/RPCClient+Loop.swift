import Foundation
import Proto
import Synchronization
import ZMQ

/// The client's I/O thread: owns the DEALER socket and its monitor.
extension RPCClient {
    func runLoop(ready: DispatchSemaphore, startError: borrowing Mutex<(any Error)?>) {
        let socket: Socket
        let monitor: Socket
        do {
            socket = try Socket(context, .dealer)
            try socket.setImmediate(true)
            try socket.setMaxMessageSize(Int64(configuration.maxMessageBytes) + 64 * 1024)
            try socket.setReconnectInterval(configuration.reconnectMilliseconds.first, max: configuration.reconnectMilliseconds.max)
            try socket.setHeartbeat(
                interval: configuration.heartbeatInterval, timeout: configuration.heartbeatTimeout,
                ttl: configuration.heartbeatTimeout)
            try socket.setSendHighWaterMark(100_000)
            try socket.setReceiveHighWaterMark(100_000)
            try socket.monitor(endpoint: monitorEndpoint, events: [.handshakeSucceeded, .disconnected, .connected])
            monitor = try Socket(context, .pair)
            try monitor.connect(monitorEndpoint)
            try socket.connect(endpoint)
        } catch {
            startError.withLock { $0 = error }
            ready.signal()
            return
        }
        ready.signal()

        let poller = Poller()
        let socketIndex = poller.add(socket, events: .in)
        let monitorIndex = poller.add(monitor, events: .in)
        let wakeIndex = poller.add(fd: wakeUp.fd, events: .in)
        var unsent: [UInt64] = []
        var lastScan: Int64 = 0
        loop: while true {
            let timeout = unsent.isEmpty ? (shared.withLock { $0.pending.isEmpty } ? 1000 : 10) : 5
            do {
                _ = try poller.poll(timeoutMilliseconds: timeout)
            } catch {
                // ETERM: the context is shutting down; pending calls end as cancelled below.
                break loop
            }
            if poller.revents(wakeIndex).contains(.in) { wakeUp.drain() }

            let (closing, cancelled, queued) = shared.withLock { state -> (Bool, [UInt64], [UInt64]) in
                defer {
                    state.cancelled.removeAll()
                    state.outbox.removeAll()
                }
                return (state.closing, state.cancelled, state.outbox)
            }
            if closing { break loop }
            for id in cancelled { resolve(id, .cancelled) }
            unsent.append(contentsOf: queued)

            // Replies first: they free the server's slots.
            if poller.revents(socketIndex).contains(.in) {
                while let frames = try? socket.receive(dontWait: true) { deliver(frames) }
            }
            if poller.revents(monitorIndex).contains(.in) {
                while let frames = try? monitor.receive(dontWait: true) {
                    guard let event = MonitorEvent(frames: frames) else { continue }
                    if event.event == .handshakeSucceeded {
                        shared.withLock { $0.connected = true }
                    } else if event.event == .disconnected {
                        shared.withLock { $0.connected = false }
                        failSent("connection to \(endpoint) was lost before the reply")
                    }
                }
            }
            // Send in order; EAGAIN means no connected server (ZMQ_IMMEDIATE) or a full queue.
            var sentCount = 0
            for id in unsent {
                guard let frames = shared.withLock({ $0.pending[id]?.frames }) else {
                    sentCount += 1  // resolved meanwhile
                    continue
                }
                guard (try? socket.send(frames, dontWait: true)) == true else { break }
                shared.withLock { $0.pending[id]?.frames = nil }
                sentCount += 1
            }
            unsent.removeFirst(sentCount)

            let now = monotonicMilliseconds()
            if now - lastScan >= 5 {
                lastScan = now
                expire(now: now)
            }
        }
        let all = shared.withLock { state -> [Pending] in
            defer { state.pending.removeAll() }
            return Array(state.pending.values)
        }
        for pending in all { pending.continuation.resume(returning: .cancelled) }
        _ = try? socket.stopMonitor()
        monitor.close()
        socket.close()
    }

    private func resolve(_ id: UInt64, _ outcome: Outcome) {
        let pending = shared.withLock { $0.pending.removeValue(forKey: id) }
        pending?.continuation.resume(returning: outcome)
    }

    private func deliver(_ frames: [[UInt8]]) {
        guard frames.count == 3, frames[0].isEmpty,
            let header = try? ResponseHeader(serializedBytes: frames[1], options: Envelope.headerLimit)
        else { return }  // not a reply of this protocol
        resolve(header.requestId, .reply(RawReply(
            code: StatusCode(rawValue: header.code), message: header.message,
            retryAfterMilliseconds: header.retryAfterMs, body: frames[2])))
    }

    private func failSent(_ why: String) {
        let lost = shared.withLock { state -> [Pending] in
            let ids = state.pending.filter { $0.value.frames == nil }.map(\.key)
            return ids.compactMap { state.pending.removeValue(forKey: $0) }
        }
        for pending in lost { pending.continuation.resume(returning: .lost(why)) }
    }

    private func expire(now: Int64) {
        let expired = shared.withLock { state -> [(Pending, Outcome)] in
            var out: [(Pending, Outcome)] = []
            for (id, pending) in state.pending {
                if pending.frames != nil, now >= pending.sendBy {
                    out.append((pending, .notSent(
                        "no connection to \(endpoint) within \(configuration.connectWaitMilliseconds) ms; is the service running?")))
                    state.pending[id] = nil
                } else if now >= pending.deadline {
                    out.append((pending, .timedOut))
                    state.pending[id] = nil
                }
            }
            return out
        }
        for (pending, outcome) in expired { pending.continuation.resume(returning: outcome) }
    }
}
