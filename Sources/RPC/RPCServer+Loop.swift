import Foundation
import Proto
import Runtime
import ZMQ

/// The I/O thread: everything here runs on it alone, so its state needs no lock.
extension RPCServer {
    /// A request that parsed: whom to answer, which method it calls, and by when.
    struct Incoming {
        /// The envelope the reply goes back with.
        let identity: [[UInt8]]
        let header: RequestHeader
        let method: Method
        let body: Frame
        /// When it was read, and its deadline, on the monotonic clock in milliseconds.
        let arrived: Int64
        let deadline: Int64
    }

    /// What admission made of a call.
    enum Admission {
        /// The call runs, holding its idempotency key (nil: none applies).
        case run(idempotencyKey: String?)
        /// The call was answered (refused, or replayed), or waits for the first call with its key.
        case settled
    }

    /// A call being served.
    struct InFlight {
        let identity: [[UInt8]]
        let requestID: UInt64
        let deadline: Int64
        let method: String
        let idempotencyKey: String?
        let task: Task<Void, Never>?
        /// The request body's size, counted against `maxInFlightBytes` until the handler ends.
        let bytes: Int
        /// Set once the caller was answered (its deadline passed, or the server stopped) while
        /// the handler goes on: what it finishes goes only to the callers waiting on its key.
        var answered = false
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

        /// Marks the caller of a call still in flight answered.
        func markAnswered(_ ticket: UInt64) {
            inFlight[ticket]?.answered = true
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
            guard !call.answered else { continue }
            state.markAnswered(ticket)
            send(socket, to: call.identity, requestID: call.requestID, Answer(
                code: .unavailable,
                message: "\(configuration.processName) stopped before \(call.method) finished; it may have run"))
            state.abandoned += 1
        }
        for (key, waiter) in state.idempotency.takeWaiters() {
            send(socket, to: waiter.identity, requestID: waiter.requestID, Answer(
                code: .unavailable,
                message: "\(configuration.processName) stopped before the first call of \(Self.method(ofKey: key)) with this idempotency key finished; it may have run"))
            state.abandoned += 1
        }
    }

    /// Reads one request and either answers it at once or starts its handler.
    private func handle(_ frames: [Frame], _ socket: Socket, _ state: LoopState) {
        counters.received.bump()
        guard let call = parse(frames, socket, state) else { return }
        guard case .run(let idempotencyKey) = admit(call, socket, state) else { return }
        dispatch(call, idempotencyKey: idempotencyKey, socket, state)
    }

    /// Splits a request into envelope, header and body and finds its method; answers (and
    /// returns nil for) what does not parse or names no method served here.
    private func parse(_ frames: [Frame], _ socket: Socket, _ state: LoopState) -> Incoming? {
        guard frames.count >= 2 else {
            // Only a routing id: nothing to answer.
            counters.dropped.bump()
            return nil
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
            send(socket, to: [frames[0].bytes], requestID: 0, Answer(code: .invalidArgument, message: why))
            return nil
        }
        let header: RequestHeader
        do {
            header = try RequestHeader(frame: frames[delimiter + 1], options: Envelope.headerLimit)
        } catch {
            counters.malformed.bump()
            send(socket, to: identity, requestID: 0, Answer(code: .invalidArgument, message: "request header: \(error)"))
            return nil
        }
        guard let method = state.methods[header.method] else {
            let answer = header.method.isEmpty
                ? Answer(code: .invalidArgument, message: "request header has no method")
                : Answer(
                    code: .unimplemented,
                    message: "unknown method \"\(header.method)\"; Health/Check lists the services served here")
            send(socket, to: identity, requestID: header.requestId, answer)
            return nil
        }
        let now = monotonicMilliseconds()
        let timeout = header.timeoutMs == 0 ? configuration.defaultTimeoutMilliseconds : header.timeoutMs
        return Incoming(
            identity: identity, header: header, method: method, body: frames[delimiter + 2],
            arrived: now, deadline: now + Int64(timeout))
    }

    /// Decides whether a parsed call runs: refuses it while draining or when the calls or
    /// bytes in flight are at their limit, replays a finished call with its idempotency key,
    /// and queues a retry behind the running one.
    ///
    /// Parse, then admit, then claim: a call refused here holds nothing, so its retry with the
    /// same idempotency key runs (a key claimed before a busy refusal stayed "running" with no
    /// call to finish it, and every retry waited on it forever).
    private func admit(_ call: Incoming, _ socket: Socket, _ state: LoopState) -> Admission {
        func refuse(_ code: StatusCode, _ message: String, retryAfter: UInt32 = 0) -> Admission {
            send(socket, to: call.identity, requestID: call.header.requestId, Answer(
                code: code, message: message, retryAfter: retryAfter))
            return .settled
        }
        // Health/Check (inline) still answers while stopping: it says NOT_SERVING.
        if state.draining && !call.method.isInline {
            return refuse(.unavailable, "\(configuration.processName) is stopping and takes no new calls; retry later")
        }
        var idempotencyKey: String?
        var waiting = false
        if call.method.mutating && !call.header.idempotencyKey.isEmpty {
            let keyBytes = call.header.idempotencyKey.utf8.count
            guard keyBytes <= configuration.maxIdempotencyKeyBytes else {
                return refuse(.invalidArgument, "idempotency_key is \(keyBytes) bytes; at most \(configuration.maxIdempotencyKeyBytes) are accepted (a UUID is 36)")
            }
            let key = call.header.method + "\u{0}" + call.header.idempotencyKey
            switch state.idempotency.lookup(key: key, now: call.arrived) {
            case let .done(outcome):
                // A stored answer costs nothing to send: no admission needed.
                counters.replayed.bump()
                send(socket, to: call.identity, requestID: call.header.requestId, Answer(replaying: outcome))
                return .settled
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
            return refuse(.resourceExhausted, "server busy: \(configuration.maxInFlight) calls in flight", retryAfter: 50)
        }
        if waiting, let key = idempotencyKey {
            // Answered when the running call finishes, or at this call's own deadline.
            counters.replayed.bump()
            state.idempotency.wait(key: key, .init(identity: call.identity, requestID: call.header.requestId, deadline: call.deadline))
            return .settled
        }
        let bytes = call.body.count
        guard state.inFlightBytes == 0 || state.inFlightBytes + bytes <= configuration.maxInFlightBytes else {
            counters.rejectedBusy.bump()
            return refuse(
                .resourceExhausted,
                "server busy: \(state.inFlightBytes) bytes of requests in flight; this one (\(bytes) bytes) would pass the limit of \(configuration.maxInFlightBytes)",
                retryAfter: 50)
        }
        if let key = idempotencyKey { state.idempotency.claim(key: key) }
        return .run(idempotencyKey: idempotencyKey)
    }

    /// Starts an admitted call where its method runs: on this thread (inline), handed to a
    /// thread of the service's (deferred), or as a task on the pool (pooled, and any call
    /// whose body is too large to decode here).
    private func dispatch(_ call: Incoming, idempotencyKey: String?, _ socket: Socket, _ state: LoopState) {
        let ticket = state.nextTicket
        state.nextTicket += 1
        let header = call.header
        var metadata: [String: String] = [:]
        for entry in header.metadata { metadata[entry.key] = entry.value }
        let context = RPCContext(
            method: header.method, requestID: header.requestId, idempotencyKey: header.idempotencyKey,
            metadata: metadata, deadlineMilliseconds: call.deadline, baseLogger: logger)
        let body = call.body
        func inFlight(_ task: Task<Void, Never>?, bytes: Int) -> InFlight {
            InFlight(
                identity: call.identity, requestID: header.requestId, deadline: call.deadline, method: header.method,
                idempotencyKey: idempotencyKey, task: task, bytes: bytes)
        }
        // Large bodies are decoded off this thread: their decode (bounded as it is) would hold
        // up every other caller meanwhile.
        let decodeHere = body.count <= Self.ioThreadDecodeLimit
        switch call.method.dispatch {
        case .inline(let handler) where decodeHere:
            let answer = Answer.of(context) { try handler(body, context) }
            finish(inFlight(nil, bytes: 0), answer, socket, state, now: monotonicMilliseconds())
        case .deferred(let handler) where decodeHere:
            // Registered before the work starts: its completion is read by this same thread.
            state.add(ticket, inFlight(nil, bytes: body.count))
            handler(body, context) { [self] result in complete(ticket, Answer(result, context: context)) }
        default:
            let dispatch = call.method.dispatch
            // One closure per call, as on the hot path every allocation counts.
            let task = if let executor = configuration.handlerExecutor {
                Task(executorPreference: executor, priority: Self.handlerPriority) { [self] in
                    await serve(dispatch, ticket: ticket, body: body, context: context)
                }
            } else {
                Task(priority: Self.handlerPriority) { [self] in
                    await serve(dispatch, ticket: ticket, body: body, context: context)
                }
            }
            state.add(ticket, inFlight(task, bytes: body.count))
        }
    }

    /// Bodies up to this size are decoded on the I/O thread for inline and deferred methods:
    /// decoding 64 KiB, however hostile, takes at most about half a millisecond (measured: 64 KiB
    /// of empty strings, refused by the memory budget, 0.44 ms; of unknown fields, 0.03 ms).
    public static let ioThreadDecodeLimit = 64 * 1024

    /// The work of a call that runs off the I/O thread: a pooled handler, or an inline or
    /// deferred one whose body is too large to decode on the I/O thread.
    private func serve(_ dispatch: Method.Dispatch, ticket: UInt64, body: Frame, context: RPCContext) async {
        // Queued behind other work past its deadline: the caller was told DEADLINE_EXCEEDED,
        // and the handler must not apply a change nobody waits for.
        if Task.isCancelled || context.deadlinePassed {
            complete(ticket, Answer(code: .deadlineExceeded, message: "deadline of \(context.method) passed before it started"))
            return
        }
        switch dispatch {
        case .pooled(let handler):
            let answer: Answer
            do {
                answer = .ok(try await Self.$insideHandler.withValue(true) { try await handler(body, context) })
            } catch {
                answer = Answer(error: error, context: context)
            }
            complete(ticket, answer)
        case .inline(let handler):
            complete(ticket, Answer.of(context) { try handler(body, context) })
        case .deferred(let handler):
            handler(body, context) { [self] result in complete(ticket, Answer(result, context: context)) }
        }
    }

    /// The method path of an idempotency cache key ("<method>\0<key>").
    static func method(ofKey key: String) -> String {
        String(key.prefix { $0 != "\u{0}" })
    }

    /// Sends the queued events; PUB never blocks, and drops at its high-water mark.
    private func sendEvents(_ publisher: Socket) {
        let events = shared.withLock { state -> [[[UInt8]]] in
            defer { state.events.removeAll(keepingCapacity: true) }
            return state.events
        }
        for event in events { _ = try? publisher.send(event, dontWait: true) }
    }

    /// Sends what the handlers finished (to nobody when the caller was answered already);
    /// returns how many completions it found.
    private func sendCompletions(_ socket: Socket, _ state: LoopState) -> Int {
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
    private func finish(_ call: InFlight, _ answer: Answer, _ socket: Socket, _ state: LoopState, now: Int64) {
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
                send(socket, to: waiter.identity, requestID: waiter.requestID, answer)
            }
        }
        guard !call.answered else { return }
        if call.deadline < now {
            // The client is about to be told DEADLINE_EXCEEDED by the deadline scan: tell it now.
            counters.deadlineExceeded.bump()
            send(socket, to: call.identity, requestID: call.requestID, Answer(
                code: .deadlineExceeded, message: "deadline passed while serving \(call.method)"))
            return
        }
        send(socket, to: call.identity, requestID: call.requestID, answer)
    }

    /// Answers DEADLINE_EXCEEDED for calls past their deadline and cancels their handlers, and
    /// to callers whose own deadline passed while they waited on a running idempotency key.
    private func expireDeadlines(_ socket: Socket, _ state: LoopState) {
        let now = monotonicMilliseconds()
        guard now - state.lastDeadlineScan >= 5, !state.inFlight.isEmpty else { return }
        state.lastDeadlineScan = now
        for (ticket, call) in state.inFlight where call.deadline < now && !call.answered {
            call.task?.cancel()
            // The entry stays until the handler ends, so an idempotent retry waits for the real
            // outcome (up to its own deadline); only the caller is answered now.
            state.markAnswered(ticket)
            counters.deadlineExceeded.bump()
            send(socket, to: call.identity, requestID: call.requestID, Answer(
                code: .deadlineExceeded, message: "deadline of \(call.method) passed before it finished"))
        }
        for (key, waiter) in state.idempotency.expireWaiters(now: now) {
            counters.deadlineExceeded.bump()
            send(socket, to: waiter.identity, requestID: waiter.requestID, Answer(
                code: .deadlineExceeded,
                message: "deadline of \(Self.method(ofKey: key)) passed while waiting for the first call with this idempotency key, which is still running"))
        }
    }

    /// Sends the reply of every answer the server gives, without blocking; a gone or slow peer
    /// loses its reply (counted), never the server.
    private func send(_ socket: Socket, to identity: [[UInt8]], requestID: UInt64, _ answer: Answer) {
        let message = Envelope.reply(
            to: identity, requestID: requestID, code: answer.code, message: answer.message,
            retryAfterMilliseconds: answer.retryAfter, body: answer.body)
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
