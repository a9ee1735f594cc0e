import Foundation
import Runtime
import ZMQ

/// The endpoint's thread: everything here runs on it alone, so its state needs no lock.
extension ScrapeEndpoint {
    /// One open TCP connection, until its request head is complete.
    struct Connection {
        var head: ScrapeHTTP.HeadBuffer
        /// When it must have sent its whole head (slowloris).
        let deadline: Int64
    }

    /// The last text rendered, and when (monotonic ms).
    struct Rendered {
        let text: String
        let at: Int64
    }

    /// The connections, by routing id, and those closed lately.
    struct Connections {
        var open: [[UInt8]: Connection] = [:]
        /// Those whose request for /metrics waits for the text being rendered: whether each
        /// asked with HEAD. No read deadline: the render's own (the body's) bounds the wait.
        var awaitingText: [[UInt8]: Bool] = [:]
        // Closed here: their disconnect notice, or bytes already on the way, must not be
        // taken for a new connection. Bounded; oldest forgotten first.
        var closed: Set<[UInt8]> = []
        var closedOrder: [[UInt8]] = []

        mutating func forgetLater(_ id: [UInt8]) {
            guard closed.insert(id).inserted else { return }
            closedOrder.append(id)
            if closedOrder.count > 4096 {
                let old = closedOrder.prefix(2048)
                for id in old { closed.remove(id) }
                closedOrder.removeFirst(2048)
            }
        }
    }

    /// The endpoint's steps on its `SocketLoop`: the STREAM socket and its connections.
    final class ScrapeLoop: SocketLoopSteps {
        let endpoint: ScrapeEndpoint
        let socket: Socket
        let socketIndex: Int
        var connections = Connections()
        var rendered: Rendered?
        /// A render is running (its task hands the text over in `shared.renderedText`).
        var rendering = false
        /// `connections.awaitingText.count` as last published in `shared`.
        var awaitingCount = 0

        init(_ endpoint: ScrapeEndpoint, _ poller: Poller) throws {
            self.endpoint = endpoint
            socket = try Socket(endpoint.context, .stream)
            try socket.setStreamNotify(true)
            // A peer's unread chunks wait in libzmq; each connection reads at most 8 KiB anyway.
            try socket.setReceiveHighWaterMark(64)
            try socket.setSendHighWaterMark(64)
            do {
                try socket.bind(endpoint.endpoint)
            } catch {
                throw ScrapeEndpointError(endpoint: endpoint.endpoint, reason: "cannot bind (taken or invalid): \(error)")
            }
            let bound = endpoint.endpoint.contains("*") || endpoint.endpoint.hasSuffix(":0") ? try socket.lastEndpoint : endpoint.endpoint
            endpoint.shared.withLock { $0.boundEndpoint = bound }
            socketIndex = poller.add(socket, events: .in)
        }

        /// Until the next connection's read deadline, or a minute; with none open, until woken.
        func pollTimeout() -> Int? {
            let now = monotonicMilliseconds()
            let next = connections.open.values.lazy.map(\.deadline).min()
            return next.map { Int(max(0, min($0 - now, 60_000))) } ?? -1
        }

        func pollFailed(_ error: any Error) {
            // The context was shut down (ETERM): nothing can be served any more.
            endpoint.logger.warning("metrics endpoint stopped serving", ["endpoint": endpoint.endpoint, "error": "\(error)"])
        }

        func turn(_ polled: Poller?) -> Bool {
            if rendering, let text = endpoint.shared.withLock({ $0.renderedText.take() }) {
                rendering = false
                rendered = text
                for (id, head) in connections.awaitingText {
                    endpoint.respond(id: id, endpoint.metricsReply(text, head: head, cached: false), socket: socket, connections: &connections)
                }
            }
            if polled?.revents(socketIndex).contains(.in) ?? true {
                // A bounded batch per turn, so expiry and stop are looked at under a flood.
                for _ in 0..<256 {
                    let message: [[UInt8]]?
                    do {
                        message = try socket.receive(dontWait: true)
                    } catch {
                        pollFailed(error)
                        return false
                    }
                    guard let message else { break }
                    guard message.count == 2 else { continue }
                    endpoint.handle(id: message[0], data: message[1], loop: self)
                }
            }
            let expiredAt = monotonicMilliseconds()
            for (id, connection) in connections.open where connection.deadline <= expiredAt {
                endpoint.respond(id: id, ScrapeHTTP.refusal(.requestTimeout), socket: socket, connections: &connections)
            }
            if connections.awaitingText.count != awaitingCount {
                awaitingCount = connections.awaitingText.count
                endpoint.shared.withLock { $0.awaitingText = awaitingCount }
            }
            return true
        }

        func drain() {
            for id in connections.open.keys { try? socket.closeStream(id) }
            for id in connections.awaitingText.keys { try? socket.closeStream(id) }
            socket.close()
        }
    }

    /// One message of the STREAM socket: a connect or disconnect notice (empty data), or bytes.
    private func handle(id: [UInt8], data: [UInt8], loop: ScrapeLoop) {
        if data.isEmpty {
            if loop.connections.open.removeValue(forKey: id) != nil { return }  // the peer went away
            if loop.connections.awaitingText.removeValue(forKey: id) != nil { return }  // gone while its text renders
            if loop.connections.closed.remove(id) != nil { return }  // the notice of one closed here
            // A new connection. When full, the oldest goes: a real scraper sends its request at
            // once, so only connections that idle lose their place, never the one just made.
            if loop.connections.open.count >= maxConnections,
               let oldest = loop.connections.open.min(by: { $0.value.deadline < $1.value.deadline })?.key {
                respond(id: oldest, ScrapeHTTP.refusal(.requestTimeout), socket: loop.socket, connections: &loop.connections)
            }
            loop.connections.open[id] = Connection(
                head: ScrapeHTTP.HeadBuffer(token: token), deadline: monotonicMilliseconds() + Int64(idleTimeoutMilliseconds))
            return
        }
        guard loop.connections.open[id] != nil else { return }  // closed or answered here already: ignore what it sends after
        guard let request = loop.connections.open[id]!.head.append(data) else { return }
        switch request {
        case .metrics(let head):
            if let rendered = loop.rendered, monotonicMilliseconds() - rendered.at < Int64(refreshMilliseconds) {
                respond(id: id, metricsReply(rendered, head: head, cached: true), socket: loop.socket, connections: &loop.connections)
            } else if loop.connections.awaitingText.count >= maxConnections {
                // As many waiting as connections allowed: a flood, not scrapers.
                respond(id: id, ScrapeHTTP.refusal(.serviceUnavailable), socket: loop.socket, connections: &loop.connections)
            } else {
                loop.connections.open.removeValue(forKey: id)
                loop.connections.awaitingText[id] = head
                if !loop.rendering {
                    loop.rendering = true
                    render()
                }
            }
        case .index(let head):
            respond(id: id, ScrapeHTTP.reply(.ok, body: "Metrics are at /metrics\n", head: head), socket: loop.socket, connections: &loop.connections)
        case .refused(let status):
            respond(id: id, ScrapeHTTP.refusal(status), socket: loop.socket, connections: &loop.connections)
        }
    }

    /// Renders the text in a task (the figures are read on the services' own executors, and
    /// no thread waits for them), then hands it to the loop and wakes it.
    private func render() {
        let started = monotonicMilliseconds()
        Task(priority: .high) { [self] in
            let text = await body()
            shared.withLock { $0.renderedText = Rendered(text: text, at: started) }
            loop.wake()
        }
    }

    /// The reply to GET or HEAD /metrics with `rendered`'s text.
    func metricsReply(_ rendered: Rendered, head: Bool, cached: Bool) -> [UInt8] {
        let reply = ScrapeHTTP.reply(.ok, contentType: ScrapeHTTP.metricsContentType, body: rendered.text, head: head)
        logger.debug("scrape", [
            "endpoint": name, "method": head ? "HEAD" : "GET", "bytes": String(rendered.text.utf8.count),
            "age_ms": String(monotonicMilliseconds() - rendered.at), "cached": cached ? "yes" : "no",
        ])
        return reply
    }

    /// Sends `bytes` and closes the connection; a peer gone or not reading loses its reply.
    func respond(id: [UInt8], _ bytes: [UInt8], socket: Socket, connections: inout Connections) {
        connections.open.removeValue(forKey: id)
        connections.awaitingText.removeValue(forKey: id)
        _ = try? socket.sendStream(to: id, bytes)
        try? socket.closeStream(id)
        connections.forgetLater(id)
    }
}
