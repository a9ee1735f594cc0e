import Foundation
import Proto
import Runtime
import ZMQ

/// The I/O thread: everything here runs on it alone, so its state needs no lock.
extension RPCServer {
    /// A call being served.
    struct InFlight {
        /// Empty once the caller was answered (its deadline passed) while the handler goes on.
        let identity: [[UInt8]]
        let requestID: UInt64
        let deadline: Int64
        let method: String
        let idempotencyKey: String?
        let task: Task<Void, Never>?
        /// The request body's size, counted against `maxInFlightBytes` until the handler ends.
        let bytes: Int
    }

    final class LoopState {
        private(set) var inFlight: [UInt64: InFlight] = [:]
        private(set) var inFlightBytes = 0
        var nextTicket: UInt64 = 1
        var idempotency: IdempotencyCache
        var lastDeadlineScan: Int64 = 0
        /// Set once the loop has seen `Shared.draining`: new calls are refused from then on.
        var draining = false
        /// Callers answered UNAVAILABLE because the server stopped with their calls in flight.
        var abandoned = 0
        // Registration ends at start(), so the table is read without a lock from here on.
        let methods: [String: Method]
        let counters: Counters

        init(_ configuration: Configuration, methods: [String: Method], counters: Counters) {
            self.methods = methods
            self.counters = counters
            idempotency = IdempotencyCache(
                capacity: configuration.idempotencyCapacity,
                timeToLiveMilliseconds: configuration.idempotencyTimeToLiveMilliseconds,
                maxBytes: configuration.idempotencyMaxBytes)
        }

        func add(_ ticket: UInt64, _ call: InFlight) {
            inFlight[ticket] = call
            inFlightBytes += call.bytes
            published()
        }

        func remove(_ ticket: UInt64) -> InFlight? {
            guard let call = inFlight.removeValue(forKey: ticket) else { return nil }
            inFlightBytes -= call.bytes
            published()
            return call
        }

        /// Replaces the caller of a call whose deadline passed with nobody.
        func answered(_ ticket: UInt64) {
            guard let call = inFlight[ticket] else { return }
            inFlight[ticket] = InFlight(
                identity: [], requestID: call.requestID, deadline: .max, method: call.method,
                idempotencyKey: call.idempotencyKey, task: call.task, bytes: call.bytes)
        }

        private func published() {
            counters.inFlight.store(inFlight.count, ordering: .relaxed)
            counters.inFlightBytes.store(inFlightBytes, ordering: .relaxed)
        }
    }

    func runLoop(ready: DispatchSemaphore) {
        let socket: Socket
        var publisher: Socket?
        do {
            socket = try Socket(context, .router)
            try socket.setRouterMandatory(true)
            // The body frame may reach the limit; the header frame is tiny.
            try socket.setMaxMessageSize(Int64(configuration.maxMessageBytes) + 64 * 1024)
            try socket.setSendHighWaterMark(10_000)
            try socket.setReceiveHighWaterMark(10_000)
            try socket.setHeartbeat(interval: 2000, timeout: 6000, ttl: 6000)
            var bound: [String] = []
            for endpoint in configuration.endpoints {
                try socket.bind(endpoint)
                bound.append(endpoint.contains("*") || endpoint.hasSuffix(":0") ? try socket.lastEndpoint : endpoint)
            }
            var boundEvents: [String] = []
            if !configuration.eventEndpoints.isEmpty {
                let pub = try Socket(context, .pub)
                publisher = pub
                try pub.setSendHighWaterMark(10_000)
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
            shared.withLock { $0.startError = error }
            ready.signal()
            return
        }
        ready.signal()

        let poller = Poller()
        let socketIndex = poller.add(socket, events: .in)
        let wakeIndex = poller.add(fd: wakeUp.fd, events: .in)
        let state = LoopState(configuration, methods: shared.withLock { $0.methods }, counters: counters)
        // While requests or completions keep coming, go round without zmq_poll: each poll is a
        // syscall, and under load the next request is usually queued already. Only a pass
        // that found nothing to do sleeps in poll (the wake-up pipe ends that sleep).
        var busy = false
        while true {
            var socketReadable = true
            if !busy {
                do {
                    _ = try poller.poll(timeoutMilliseconds: state.inFlight.isEmpty ? 1000 : 10)
                } catch {
                    logger.error("poll failed; stopping", ["error": "\(error)"])
                    break
                }
                if poller.revents(wakeIndex).contains(.in) { wakeUp.drain() }
                socketReadable = poller.revents(socketIndex).contains(.in)
            }
            // Read after the poll, which `stop()` and `drain()` wake: from the requests read
            // next on, a drain refuses them.
            let (stopping, draining, abandoning) = shared.withLock {
                ($0.stopping, $0.draining, $0.abandoning && !$0.abandoned)
            }
            if stopping { break }
            state.draining = draining
            if abandoning {
                abandonCallers(socket, state)
                shared.withLock { $0.abandoned = true }
            }
            if let publisher { sendEvents(publisher) }
            let completed = sendCompletions(socket, state)
            var received = 0
            if socketReadable {
                // Bounded batch so completions and deadlines get their turn under load.
                while received < 256 {
                    let frames: [Frame]?
                    do {
                        frames = try socket.receiveFrames(dontWait: true)
                    } catch {
                        logger.warning("receive failed", ["error": "\(error)"])
                        break
                    }
                    guard let frames else { break }
                    handle(frames, socket, state)
                    received += 1
                }
            }
            expireDeadlines(socket, state)
            if state.draining && state.inFlight.isEmpty {
                shared.withLock { $0.drained = true }
            }
            busy = received > 0 || completed > 0
        }
        if let publisher {
            sendEvents(publisher)
            publisher.close()
        }
        abandonCallers(socket, state)
        // Linger 0 would drop those answers with the socket; give them a moment to leave.
        if state.abandoned > 0 { try? socket.setLinger(milliseconds: 200) }
        socket.close()
        logger.info("stopped", ["rpc": configuration.endpoints.joined(separator: ",")])
    }

    /// Answers UNAVAILABLE to every caller still waiting (the server stops, or its stop grace
    /// time passed, with calls in flight) and cancels their handlers; what those finish later,
    /// perhaps against a closed store, is sent nowhere.
    private func abandonCallers(_ socket: Socket, _ state: LoopState) {
        for (ticket, call) in state.inFlight {
            call.task?.cancel()
            guard !call.identity.isEmpty else { continue }
            state.answered(ticket)
            send(socket, Envelope.reply(
                to: call.identity, requestID: call.requestID, code: .unavailable,
                message: "\(configuration.processName) stopped before \(call.method) finished; it may have run"))
            state.abandoned += 1
        }
        for (key, waiter) in state.idempotency.takeWaiters() {
            send(socket, Envelope.reply(
                to: waiter.identity, requestID: waiter.requestID, code: .unavailable,
                message: "\(configuration.processName) stopped before the first call of \(Self.method(ofKey: key)) with this idempotency key finished; it may have run"))
            state.abandoned += 1
        }
    }

    /// Reads one request and either answers it at once or starts its handler.
    private func handle(_ frames: [Frame], _ socket: Socket, _ state: LoopState) {
        counters.received.bump()
        guard frames.count >= 2 else {
            // Only a routing id: nothing to answer.
            counters.dropped.bump()
            return
        }
        // The envelope is every frame before the empty delimiter: the peer's routing id, plus
        // whatever a proxy or a REQ socket with ZMQ_REQ_CORRELATE put in front. It goes back as is.
        let delimiter = frames.firstIndex(where: \.isEmpty) ?? frames.count
        let identity = frames[0..<max(1, delimiter)].map(\.bytes)
        guard delimiter >= 1, delimiter < frames.count, frames.count - delimiter == 3 else {
            counters.malformed.bump()
            let got = frames.count - 1
            var why = "expected 3 frames (empty delimiter, RequestHeader, request) after the routing id, got \(got)"
            if delimiter != 1 && got > 0 {
                why += "; frame 0 must be the empty delimiter (got \(frames[1].count) bytes)"
            }
            send(socket, Envelope.reply(to: [frames[0].bytes], requestID: 0, code: .invalidArgument, message: why))
            return
        }
        let header: RequestHeader
        do {
            header = try RequestHeader(frame: frames[delimiter + 1], options: Envelope.headerLimit)
        } catch {
            counters.malformed.bump()
            send(socket, Envelope.reply(
                to: identity, requestID: 0, code: .invalidArgument, message: "request header: \(error)"))
            return
        }
        let method = state.methods[header.method]
        guard let method else {
            let message = header.method.isEmpty
                ? "request header has no method"
                : "unknown method \"\(header.method)\"; Health/Check lists the services served here"
            send(socket, Envelope.reply(
                to: identity, requestID: header.requestId,
                code: header.method.isEmpty ? .invalidArgument : .unimplemented, message: message))
            return
        }
        let now = monotonicMilliseconds()
        let timeout = header.timeoutMs == 0 ? configuration.defaultTimeoutMilliseconds : header.timeoutMs
        let deadline = now + Int64(timeout)
        let body = frames[delimiter + 2]
        func refuse(_ code: StatusCode, _ message: String, retryAfter: UInt32 = 0) {
            send(socket, Envelope.reply(
                to: identity, requestID: header.requestId, code: code, message: message, retryAfterMilliseconds: retryAfter))
        }

        // Health/Check (inline) still answers while stopping: it says NOT_SERVING.
        if state.draining && method.inlineHandler == nil {
            refuse(.unavailable, "\(configuration.processName) is stopping and takes no new calls; retry later")
            return
        }

        // Parse, then admit, then claim: a call refused here holds nothing, so its retry with
        // the same idempotency key runs (a key claimed before a busy refusal stayed "running"
        // with no call to finish it, and every retry waited on it forever).
        var idempotencyKey: String?
        var waiting = false
        if method.mutating && !header.idempotencyKey.isEmpty {
            let keyBytes = header.idempotencyKey.utf8.count
            guard keyBytes <= configuration.maxIdempotencyKeyBytes else {
                refuse(.invalidArgument, "idempotency_key is \(keyBytes) bytes; at most \(configuration.maxIdempotencyKeyBytes) are accepted (a UUID is 36)")
                return
            }
            let key = header.method + "\u{0}" + header.idempotencyKey
            switch state.idempotency.lookup(key: key, now: now) {
            case let .done(outcome):
                // A stored answer costs nothing to send: no admission needed.
                counters.replayed.bump()
                send(socket, Envelope.reply(
                    to: identity, requestID: header.requestId, code: StatusCode(rawValue: outcome.code),
                    message: outcome.message, body: outcome.body))
                return
            case .running:
                waiting = true
            case .absent:
                break
            }
            idempotencyKey = key
        }

        let calls = state.inFlight.count + state.idempotency.waiterCount
        guard calls < configuration.maxInFlight else {
            counters.rejectedBusy.bump()
            refuse(.resourceExhausted, "server busy: \(configuration.maxInFlight) calls in flight", retryAfter: 50)
            return
        }
        if waiting, let key = idempotencyKey {
            // Answered when the running call finishes, or at this call's own deadline.
            counters.replayed.bump()
            state.idempotency.wait(key: key, .init(identity: identity, requestID: header.requestId, deadline: deadline))
            return
        }
        guard state.inFlightBytes == 0 || state.inFlightBytes + body.count <= configuration.maxInFlightBytes else {
            counters.rejectedBusy.bump()
            refuse(
                .resourceExhausted,
                "server busy: \(state.inFlightBytes) bytes of requests in flight; this one (\(body.count) bytes) would pass the limit of \(configuration.maxInFlightBytes)",
                retryAfter: 50)
            return
        }
        if let key = idempotencyKey { state.idempotency.claim(key: key) }

        let ticket = state.nextTicket
        state.nextTicket += 1
        var metadata: [String: String] = [:]
        for entry in header.metadata { metadata[entry.key] = entry.value }
        let context = RPCContext(
            method: header.method, requestID: header.requestId, idempotencyKey: header.idempotencyKey,
            metadata: metadata, deadlineMilliseconds: deadline, baseLogger: logger)
        let path = header.method
        // Large bodies are decoded off this thread: their decode (bounded as it is) would hold
        // up every other caller meanwhile.
        let decodeHere = body.count <= Self.ioThreadDecodeLimit
        if let inline = method.inlineHandler, decodeHere {
            let completion = Self.completion(ticket: ticket, method: path, context: context) {
                try inline(body, context)
            }
            let call = InFlight(
                identity: identity, requestID: header.requestId, deadline: deadline, method: path,
                idempotencyKey: idempotencyKey, task: nil, bytes: 0)
            finish(call, completion, socket, state, now: monotonicMilliseconds())
            return
        }
        if let deferred = method.deferredHandler, decodeHere {
            // Registered before the work starts: its completion is read by this same thread.
            state.add(ticket, InFlight(
                identity: identity, requestID: header.requestId, deadline: deadline, method: path,
                idempotencyKey: idempotencyKey, task: nil, bytes: body.count))
            deferred(body, context) { [self] result in
                complete(Self.completion(ticket: ticket, method: path, context: context) { try result.get() })
            }
            return
        }
        // One closure per call, as on the hot path every allocation counts.
        let task = if let executor = configuration.handlerExecutor {
            Task(executorPreference: executor, priority: Self.handlerPriority) { [self] in
                await serve(method, ticket: ticket, body: body, context: context)
            }
        } else {
            Task(priority: Self.handlerPriority) { [self] in
                await serve(method, ticket: ticket, body: body, context: context)
            }
        }
        state.add(ticket, InFlight(
            identity: identity, requestID: header.requestId, deadline: deadline, method: path,
            idempotencyKey: idempotencyKey, task: task, bytes: body.count))
    }

    /// Bodies up to this size are decoded on the I/O thread for inline and deferred methods:
    /// decoding 64 KiB, however hostile, takes at most about half a millisecond (measured: 64 KiB
    /// of empty strings, refused by the memory budget, 0.44 ms; of unknown fields, 0.03 ms).
    public static let ioThreadDecodeLimit = 64 * 1024

    /// The work of a call that runs off the I/O thread: a pooled handler, or an inline or
    /// deferred one whose body is too large to decode on the I/O thread.
    private func serve(_ method: Method, ticket: UInt64, body: Frame, context: RPCContext) async {
        let path = context.method
        // Queued behind other work past its deadline: the caller was told DEADLINE_EXCEEDED,
        // and the handler must not apply a change nobody waits for.
        if Task.isCancelled || context.deadlinePassed {
            complete(Completion(
                ticket: ticket, code: .deadlineExceeded, message: "deadline of \(path) passed before it started",
                retryAfter: 0, body: .empty))
            return
        }
        if let handler = method.handler {
            let completion: Completion
            do {
                let response = try await Self.$insideHandler.withValue(true) { try await handler(body, context) }
                completion = Completion(ticket: ticket, code: .ok, message: "", retryAfter: 0, body: response)
            } catch let error as RPCError {
                completion = Completion(
                    ticket: ticket, code: error.code, message: error.message,
                    retryAfter: error.retryAfterMilliseconds, body: .empty)
            } catch is CancellationError {
                completion = Completion(
                    ticket: ticket, code: .deadlineExceeded, message: "deadline passed while serving \(path)",
                    retryAfter: 0, body: .empty)
            } catch {
                context.logger.error("handler failed", ["error": "\(error)"])
                completion = Completion(
                    ticket: ticket, code: .internal, message: "internal error in \(path): \(error)",
                    retryAfter: 0, body: .empty)
            }
            complete(completion)
        } else if let inline = method.inlineHandler {
            complete(Self.completion(ticket: ticket, method: path, context: context) { try inline(body, context) })
        } else if let deferred = method.deferredHandler {
            deferred(body, context) { [self] result in
                complete(Self.completion(ticket: ticket, method: path, context: context) { try result.get() })
            }
        }
    }

    /// The method path of an idempotency cache key ("<method>\0<key>").
    static func method(ofKey key: String) -> String {
        String(key.prefix { $0 != "\u{0}" })
    }

    /// Sends what the handlers finished; drops answers whose call already timed out.
    /// Sends the queued events; PUB never blocks, and drops at its high-water mark.
    private func sendEvents(_ publisher: Socket) {
        let events = shared.withLock { state -> [[[UInt8]]] in
            defer { state.events.removeAll(keepingCapacity: true) }
            return state.events
        }
        for event in events { _ = try? publisher.send(event, dontWait: true) }
    }

    /// Returns how many completions it found.
    private func sendCompletions(_ socket: Socket, _ state: LoopState) -> Int {
        let completions = shared.withLock { state -> [Completion] in
            defer { state.replies.removeAll(keepingCapacity: true) }
            return state.replies
        }
        guard !completions.isEmpty else { return 0 }
        let now = monotonicMilliseconds()
        for completion in completions {
            guard let call = state.remove(completion.ticket) else { continue }
            finish(call, completion, socket, state, now: now)
        }
        return completions.count
    }

    /// Answers one finished call (and callers waiting on its idempotency key).
    private func finish(_ call: InFlight, _ completion: Completion, _ socket: Socket, _ state: LoopState, now: Int64) {
        if let key = call.idempotencyKey {
            // Kept only when the answer is the call's last word. ABORTED means the change was not
            // applied (a concurrent call on the same image key or upload was first, a stale
            // expected_version): a retry with the same key must run again, not replay 10.
            let transient: Set<StatusCode> = [
                .unavailable, .resourceExhausted, .deadlineExceeded, .internal, .unknown, .cancelled, .aborted,
            ]
            let outcome = IdempotencyCache.Outcome(
                code: completion.code.rawValue, message: completion.message, body: completion.body)
            let waiters = state.idempotency.finish(
                key: key, outcome: outcome, keep: !transient.contains(completion.code), now: now)
            for waiter in waiters {
                send(socket, Envelope.reply(
                    to: waiter.identity, requestID: waiter.requestID, code: completion.code,
                    message: completion.message, retryAfterMilliseconds: completion.retryAfter,
                    body: completion.body))
            }
        }
        if call.deadline < now {
            // The client was told DEADLINE_EXCEEDED already, or is about to be.
            counters.deadlineExceeded.bump()
            send(socket, Envelope.reply(
                to: call.identity, requestID: call.requestID, code: .deadlineExceeded,
                message: "deadline passed while serving \(call.method)"))
            return
        }
        send(socket, Envelope.reply(
            to: call.identity, requestID: call.requestID, code: completion.code, message: completion.message,
            retryAfterMilliseconds: completion.retryAfter, body: completion.body))
    }

    /// Runs a handler body and turns its result or error into a completion.
    static func completion(
        ticket: UInt64, method: String, context: RPCContext, _ body: () throws -> MessageBody
    ) -> Completion {
        do {
            return Completion(ticket: ticket, code: .ok, message: "", retryAfter: 0, body: try body())
        } catch let error as RPCError {
            return Completion(
                ticket: ticket, code: error.code, message: error.message, retryAfter: error.retryAfterMilliseconds, body: .empty)
        } catch {
            context.logger.error("handler failed", ["error": "\(error)"])
            return Completion(
                ticket: ticket, code: .internal, message: "internal error in \(method): \(error)", retryAfter: 0, body: .empty)
        }
    }

    /// Answers DEADLINE_EXCEEDED for calls past their deadline and cancels their handlers, and
    /// to callers whose own deadline passed while they waited on a running idempotency key.
    private func expireDeadlines(_ socket: Socket, _ state: LoopState) {
        let now = monotonicMilliseconds()
        guard now - state.lastDeadlineScan >= 5, !state.inFlight.isEmpty else { return }
        state.lastDeadlineScan = now
        for (ticket, call) in state.inFlight where call.deadline < now {
            call.task?.cancel()
            // The entry stays until the handler ends, so an idempotent retry waits for the real
            // outcome (up to its own deadline); only the caller is answered now.
            state.answered(ticket)
            counters.deadlineExceeded.bump()
            send(socket, Envelope.reply(
                to: call.identity, requestID: call.requestID, code: .deadlineExceeded,
                message: "deadline of \(call.method) passed before it finished"))
        }
        for (key, waiter) in state.idempotency.expireWaiters(now: now) {
            counters.deadlineExceeded.bump()
            send(socket, Envelope.reply(
                to: waiter.identity, requestID: waiter.requestID, code: .deadlineExceeded,
                message: "deadline of \(Self.method(ofKey: key)) passed while waiting for the first call with this idempotency key, which is still running"))
        }
    }

    /// Sends a reply without blocking; a gone or slow peer loses its reply (counted), never the server.
    private func send(_ socket: Socket, _ message: OutgoingMessage) {
        guard !message.head[0].isEmpty else { return }  // the caller was answered already (empty envelope)
        do {
            if try socket.send(message, dontWait: true) {
                counters.replied.bump()
            } else {
                counters.dropped.bump()
            }
        } catch {
            // EHOSTUNREACH: the peer disconnected (ROUTER_MANDATORY makes that visible).
            counters.dropped.bump()
        }
    }
}
