import CurveAuth
import Foundation
import Proto
import Runtime
import ZMQ

/// The I/O thread: everything here runs on it alone, so its state needs no lock.
extension RPCServer {
    /// A call being served.
    struct InFlight {
        let identity: [[UInt8]]
        /// Whose share of the per-peer limits it counts against: the CURVE key, else the connection.
        let peer: [UInt8]
        let requestID: UInt64
        let deadline: Int64
        let method: String
        let idempotencyKey: String?
        var task: Task<Void, Never>?
        /// The request body's size, counted against `maxInFlightBytes` until the handler ends.
        let bytes: Int
        /// What its reply is counted under.
        let tag: CallTag
        /// Told when the handler's answer does not reach the caller.
        var undelivered: UndeliveredHook? = nil
        /// Set once the caller was answered (its deadline passed, or the server stopped) while
        /// the handler goes on: what it finishes goes only to the callers waiting on its key.
        var answered = false
    }

    final class LoopState {
        private(set) var inFlight: [UInt64: InFlight] = [:]
        private(set) var inFlightBytes = 0
        /// Calls and request bytes in flight by peer (its routing id), for the per-peer limits.
        private(set) var perPeer: [[UInt8]: (calls: Int, bytes: Int)] = [:]
        var nextTicket: UInt64 = 1
        var idempotency: IdempotencyCache
        var lastDeadlineScan: Int64 = 0
        /// Set once the loop has seen `Shared.draining`: new calls are refused from then on.
        var draining = false
        /// The in-flight limits `admit` checks (AdmissionLimits.swift).
        let limits: AdmissionLimits
        /// What a call's idempotency key makes of it, over `idempotency` (IdempotencyGate.swift).
        let gate: IdempotencyGate
        /// Calls' deadlines: set at parse, scanned by the loop (CallDeadlines.swift).
        let deadlines: CallDeadlines
        // Registration ends at start(), so the table is read without a lock from here on.
        let methods: [String: Method]
        let counters: Counters
        let metrics: CallMetrics
        /// The allowed keys each message's User-Id is checked against (nil: no CURVE).
        let keys: KeyTable?

        init(
            _ configuration: Configuration, methods: [String: Method], counters: Counters, metrics: CallMetrics,
            keys: KeyTable?
        ) {
            self.keys = keys
            self.methods = methods
            self.counters = counters
            self.metrics = metrics
            limits = AdmissionLimits(configuration)
            gate = IdempotencyGate(maxKeyBytes: configuration.maxIdempotencyKeyBytes)
            deadlines = CallDeadlines(defaultTimeoutMilliseconds: configuration.defaultTimeoutMilliseconds)
            idempotency = IdempotencyCache(
                capacity: configuration.idempotencyCapacity,
                timeToLiveMilliseconds: configuration.idempotencyTimeToLiveMilliseconds,
                maxBytes: configuration.idempotencyMaxBytes)
        }

        func add(_ ticket: UInt64, _ call: InFlight) {
            inFlight[ticket] = call
            inFlightBytes += call.bytes
            let load = perPeer[call.peer] ?? (0, 0)
            perPeer[call.peer] = (load.calls + 1, load.bytes + call.bytes)
            published()
        }

        func remove(_ ticket: UInt64) -> InFlight? {
            guard let call = inFlight.removeValue(forKey: ticket) else { return nil }
            inFlightBytes -= call.bytes
            let peer = call.peer
            if let load = perPeer[peer], load.calls > 1 {
                perPeer[peer] = (load.calls - 1, load.bytes - call.bytes)
            } else {
                perPeer[peer] = nil
            }
            published()
            return call
        }

        /// What one peer has in flight.
        func load(of peer: [UInt8]) -> (calls: Int, bytes: Int) {
            perPeer[peer] ?? (0, 0)
        }

        /// The task running a call added in flight (its handler may have answered already).
        func setTask(_ task: Task<Void, Never>, of ticket: UInt64) {
            inFlight[ticket]?.task = task
        }

        /// Marks the caller of a call still in flight answered.
        func markAnswered(_ ticket: UInt64) {
            inFlight[ticket]?.answered = true
        }

        private func published() {
            counters.inFlight.store(inFlight.count, ordering: .relaxed)
            counters.inFlightBytes.store(inFlightBytes, ordering: .relaxed)
        }
    }

    /// Makes the ROUTER socket and binds it (and the PUB socket, with event endpoints): the I/O
    /// thread's set-up.
    func bindSockets() throws -> (socket: Socket, publisher: Socket?) {
        let socket = try Socket(context, .router)
        var publisher: Socket?
        do {
            try TransportSecurity.of(context)?.secureServer(socket)
            try socket.setRouterMandatory(true)
            // The body frame may reach the limit; the header frame is tiny.
            try socket.setMaxMessageSize(Int64(configuration.maxMessageBytes) + 64 * 1024)
            try socket.setSendHighWaterMark(10_000)
            try socket.setReceiveHighWaterMark(10_000)
            try socket.setHeartbeat(interval: 2000, timeout: 6000, ttl: 6000)
            try socket.setHandshakeInterval(milliseconds: configuration.handshakeTimeoutMilliseconds)
            var bound: [String] = []
            for endpoint in configuration.endpoints {
                try socket.bind(endpoint)
                bound.append(endpoint.contains("*") || endpoint.hasSuffix(":0") ? try socket.lastEndpoint : endpoint)
            }
            var boundEvents: [String] = []
            if !configuration.eventEndpoints.isEmpty {
                let pub = try makePublisher()
                publisher = pub
                for endpoint in configuration.eventEndpoints {
                    try pub.bind(endpoint)
                    boundEvents.append(endpoint.contains("*") || endpoint.hasSuffix(":0") ? try pub.lastEndpoint : endpoint)
                }
            }
            shared.withLock {
                $0.boundEndpoints = bound
                $0.boundEventEndpoints = boundEvents
            }
        } catch {
            publisher?.close()
            socket.close()
            throw error
        }
        return (socket, publisher)
    }

    /// The I/O thread's steps on its `SocketLoop`: reads requests, sends replies and events.
    final class IOLoop: SocketLoopSteps {
        let server: RPCServer
        let socket: Socket
        var publisher: Socket?
        let socketIndex: Int
        let state: LoopState
        let keys: KeyTable?
        var resubscription: Resubscription
        /// The last turn found work: the next one goes round without zmq_poll (see `pollTimeout`).
        var busy = false
        /// `Shared.drained` was set (once: it is never cleared).
        var drained = false

        init(_ server: RPCServer, _ poller: Poller) throws {
            self.server = server
            (socket, publisher) = try server.bindSockets()
            socketIndex = poller.add(socket, events: .in)
            let (methods, metrics) = server.shared.withLock { ($0.methods, $0.metrics!) }
            keys = TransportSecurity.of(server.context)?.server?.keys
            state = LoopState(server.configuration, methods: methods, counters: server.counters, metrics: metrics, keys: keys)
            resubscription = Resubscription(endpoints: server.boundEventEndpoints)
            if publisher != nil, let keys {
                keys.onRevocation { [weak server] in
                    guard let server else { return }
                    server.shared.withLock { $0.resubscribeEvents = true }
                    server.loop.wake()
                }
            }
        }

        // While requests or completions keep coming, go round without zmq_poll: each poll is a
        // syscall, and under load the next request is usually queued already. Only a pass
        // that found nothing to do sleeps in poll (the loop's wake-up ends that sleep).
        func pollTimeout() -> Int? {
            busy ? nil : (state.inFlight.isEmpty && !resubscription.pending ? 1000 : 10)
        }

        func pollFailed(_ error: any Error) {
            server.logger.error("poll failed; stopping", ["error": "\(error)"])
        }

        func turn(_ polled: Poller?) -> Bool {
            let socketReadable = polled?.revents(socketIndex).contains(.in) ?? true
            // Read after the poll, which `stop()` and `drain()` wake: from the requests read
            // next on, a drain refuses them.
            let (draining, abandoning) = server.shared.withLock { ($0.draining, $0.abandoning && !$0.abandoned) }
            state.draining = draining
            if abandoning {
                server.abandonCallers(socket, state)
                server.shared.withLock { $0.abandoned = true }
                server.loop.notifyWaiters()
            }
            if !server.configuration.eventEndpoints.isEmpty {
                // The events and the revocation flag are taken together: an event published after
                // a revocation never leaves on the connections it closes.
                let (events, resubscribe) = server.takeEvents()
                if resubscribe { publisher = resubscription.begin(replacing: publisher, server: server) }
                if resubscription.pending, let publisher { resubscription.rebind(publisher, server: server) }
                if let publisher { for event in events { _ = try? publisher.send(event, dontWait: true) } }
            }
            let completed = server.sendCompletions(socket, state)
            var received = 0
            if socketReadable {
                // Bounded batch so completions and deadlines get their turn under load.
                while received < 256 {
                    let message: (frames: [Frame], userID: String?)?
                    do {
                        // With CURVE each message carries its key (User-Id), checked per call.
                        message = keys == nil
                            ? try socket.receiveFrames(dontWait: true).map { ($0, nil) }
                            : try socket.receiveFramesWithUserID(dontWait: true)
                    } catch {
                        server.logger.warning("receive failed", ["error": "\(error)"])
                        break
                    }
                    guard let message else { break }
                    server.handle(message.frames, userID: message.userID, socket, state)
                    received += 1
                }
            }
            server.expireDeadlines(socket, state)
            if state.draining && state.inFlight.isEmpty && !drained {
                drained = true
                server.shared.withLock { $0.drained = true }
                server.loop.notifyWaiters()
            }
            busy = received > 0 || completed > 0
            return true
        }

        func drain() {
            if let publisher {
                for event in server.takeEvents().events { _ = try? publisher.send(event, dontWait: true) }
                // The last events too get a second to reach the subscribers (see the socket's below).
                try? publisher.setLinger(milliseconds: 1000)
                publisher.close()
            }
            server.abandonCallers(socket, state)
            // Linger 0 would drop with the socket the answers queued last, those of the calls the
            // drain let finish (a waiting Lease answered empty, a Complete) and the abandoned ones'
            // UNAVAILABLE: give them a second to leave (the context's end waits at most this long,
            // and only for a peer that does not read them).
            try? socket.setLinger(milliseconds: 1000)
            socket.close()
            server.logger.info("stopped", ["rpc": server.configuration.endpoints.joined(separator: ",")])
        }
    }

    /// Drops every event subscriber's connection when allowed keys are revoked, so each one
    /// authenticates again through ZAP and a revoked key hears nothing more: the PUB socket
    /// cannot tell its subscribers apart (no per-message User-Id goes that way), so it is closed
    /// at once (linger 0: what its connections had queued is dropped, not sent) and a new one
    /// binds the same endpoints. A port not yet released is retried each turn of the loop
    /// (every 10 ms); one still refused after a second is reported as the condition "events".
    struct Resubscription {
        /// The event endpoints, as bound.
        let endpoints: [String]
        /// Those the current socket has not bound yet.
        private var unbound: [String] = []
        /// When the new socket was made (monotonic ms).
        private var since: Int64 = 0

        init(endpoints: [String]) {
            self.endpoints = endpoints
        }

        var pending: Bool { !unbound.isEmpty }

        /// Closes `old` and returns the socket that replaces it (nil when none could be made:
        /// then events are not published, and the condition says so).
        mutating func begin(replacing old: Socket?, server: RPCServer) -> Socket? {
            server.logger.info(
                "allowed keys revoked: event subscribers reconnect and authenticate again", ["events": endpoints.joined(separator: ",")])
            try? old?.setLinger(milliseconds: 0)
            old?.close()
            unbound = endpoints
            since = monotonicMilliseconds()
            do {
                return try server.makePublisher()
            } catch {
                server.setCondition("events", "events are not published: no event socket could be made after the allowed keys changed: \(error)")
                unbound = []
                return nil
            }
        }

        mutating func rebind(_ publisher: Socket, server: RPCServer) {
            var failures: [String] = []
            unbound.removeAll { endpoint in
                do {
                    try publisher.bind(endpoint)
                    return true
                } catch {
                    failures.append("\(endpoint): \(error)")
                    return false
                }
            }
            if unbound.isEmpty {
                server.clearCondition("events")
            } else if monotonicMilliseconds() - since >= 1000 {
                server.setCondition(
                    "events", "events are not published: binding \(failures.joined(separator: "; ")) failed again after the "
                        + "allowed keys changed (retrying); is another process on that port?")
            }
        }
    }

    /// Answers UNAVAILABLE to every caller still waiting (the server stops, or its stop grace
    /// time passed, with calls in flight) and cancels their handlers; what those finish later,
    /// perhaps against a closed store, is sent nowhere.
    fileprivate func abandonCallers(_ socket: Socket, _ state: LoopState) {
        for (ticket, call) in state.inFlight {
            call.task?.cancel()
            guard !call.answered else { continue }
            state.markAnswered(ticket)
            send(socket, to: call.identity, requestID: call.requestID, Answer(
                code: .unavailable,
                message: "\(configuration.processName) stopped before \(call.method) finished; it may have run"), call.tag, state)
        }
        for (key, waiter) in state.idempotency.takeWaiters() {
            send(socket, to: waiter.identity, requestID: waiter.requestID, Answer(
                code: .unavailable,
                message: "\(configuration.processName) stopped before the first call of \(Self.method(ofKey: key)) with this idempotency key finished; it may have run"),
                waiter.tag, state)
        }
    }

    /// The method path of an idempotency cache key ("<method>\0<key>").
    static func method(ofKey key: String) -> String {
        String(key.prefix { $0 != "\u{0}" })
    }

    /// The queued events (PUB never blocks, and drops at its high-water mark), and whether keys
    /// were revoked since the last call.
    fileprivate func takeEvents() -> (events: [[[UInt8]]], resubscribe: Bool) {
        shared.withLock { state in
            defer {
                state.events.removeAll(keepingCapacity: true)
                state.resubscribeEvents = false
            }
            return (state.events, state.resubscribeEvents)
        }
    }

    /// A new event socket, not bound yet: a CURVE server when the process has keys (events go
    /// only to allowed keys).
    func makePublisher() throws -> Socket {
        let publisher = try Socket(context, .pub)
        do {
            try TransportSecurity.of(context)?.secureServer(publisher)
            try publisher.setSendHighWaterMark(10_000)
            try publisher.setHandshakeInterval(milliseconds: configuration.handshakeTimeoutMilliseconds)
        } catch {
            publisher.close()
            throw error
        }
        return publisher
    }

    /// Sends what the handlers finished (to nobody when the caller was answered already);
    /// returns how many completions it found.
    fileprivate func sendCompletions(_ socket: Socket, _ state: LoopState) -> Int {
        let completions = shared.withLock { state -> [Completion] in
            defer { state.replies.removeAll(keepingCapacity: true) }
            return state.replies
        }
        guard !completions.isEmpty else { return 0 }
        let now = monotonicMilliseconds()
        for completion in completions {
            guard let call = state.remove(completion.ticket) else { continue }
            finish(call, completion.answer, socket, state, now: now)
        }
        return completions.count
    }

    /// Answers one finished call (and callers waiting on its idempotency key).
    func finish(_ call: InFlight, _ answer: Answer, _ socket: Socket, _ state: LoopState, now: Int64) {
        if let key = call.idempotencyKey {
            // Kept only when the answer is the call's last word. ABORTED means the change was not
            // applied (a concurrent call on the same image key or upload was first, a stale
            // expected_version): a retry with the same key must run again, not replay 10.
            let transient: Set<StatusCode> = [
                .unavailable, .resourceExhausted, .deadlineExceeded, .internal, .unknown, .cancelled, .aborted,
            ]
            let outcome = IdempotencyCache.Outcome(code: answer.code.rawValue, message: answer.message, body: answer.body)
            let waiters = state.idempotency.finish(
                key: key, outcome: outcome, keep: !transient.contains(answer.code), now: now)
            for waiter in waiters {
                send(socket, to: waiter.identity, requestID: waiter.requestID, answer, waiter.tag, state)
            }
        }
        guard !call.answered else {
            call.undelivered?.fire()
            return
        }
        if CallDeadlines.passed(call.deadline, now: now) {
            // The client is about to be told DEADLINE_EXCEEDED by the deadline scan: tell it now.
            counters.deadlineExceeded.bump()
            send(socket, to: call.identity, requestID: call.requestID, CallDeadlines.whileServing(call.method), call.tag, state)
            call.undelivered?.fire()
            return
        }
        if !send(socket, to: call.identity, requestID: call.requestID, answer, call.tag, state) { call.undelivered?.fire() }
    }

    /// Answers DEADLINE_EXCEEDED for calls past their deadline and cancels their handlers, and
    /// to callers whose own deadline passed while they waited on a running idempotency key.
    fileprivate func expireDeadlines(_ socket: Socket, _ state: LoopState) {
        let now = monotonicMilliseconds()
        guard CallDeadlines.scanDue(now: now, lastScan: state.lastDeadlineScan), !state.inFlight.isEmpty else { return }
        state.lastDeadlineScan = now
        for (ticket, call) in state.inFlight where CallDeadlines.passed(call.deadline, now: now) && !call.answered {
            call.task?.cancel()
            // The entry stays until the handler ends, so an idempotent retry waits for the real
            // outcome (up to its own deadline); only the caller is answered now.
            state.markAnswered(ticket)
            counters.deadlineExceeded.bump()
            send(socket, to: call.identity, requestID: call.requestID, CallDeadlines.beforeFinish(call.method), call.tag, state)
        }
        for (key, waiter) in state.idempotency.expireWaiters(now: now) {
            counters.deadlineExceeded.bump()
            send(socket, to: waiter.identity, requestID: waiter.requestID, CallDeadlines.whileWaiting(Self.method(ofKey: key)), waiter.tag, state)
        }
    }

    /// Sends the reply of every answer the server gives, without blocking; a gone or slow peer
    /// loses its reply (counted, and false returned), never the server. Every answer is counted
    /// under `tag` (Metrics/Stats) and, at debug level, logged as one line.
    @discardableResult
    func send(
        _ socket: Socket, to identity: [[UInt8]], requestID: UInt64, _ answer: Answer, _ tag: CallTag, _ state: LoopState
    ) -> Bool {
        state.metrics.answered(answer.code, replyBytes: answer.body.count, tag)
        let message = Envelope.reply(
            to: identity, requestID: requestID, code: answer.code, message: answer.message,
            retryAfterMilliseconds: answer.retryAfter, reason: answer.reason, body: answer.body)
        do {
            if try socket.send(message, dontWait: true) {
                counters.replied.bump()
                return true
            }
            counters.dropped.bump()
        } catch {
            // EHOSTUNREACH: the peer disconnected (ROUTER_MANDATORY makes that visible).
            counters.dropped.bump()
        }
        return false
    }
}
