import CurveAuth
import Foundation
import Proto
import Runtime
import ZMQ

/// One request on the I/O thread: parse → admit → dispatch, and the work of a call that runs
/// off it (`serve`). The loop that reads requests and sends replies is `RPCServer+Loop.swift`.
extension RPCServer {
    /// A request that parsed: whom to answer, which method it calls, and by when.
    struct Incoming {
        /// The envelope the reply goes back with.
        let identity: [[UInt8]]
        /// Whose share of the per-peer limits it counts against: the CURVE key, else the connection.
        let peer: [UInt8]
        let header: RequestHeader
        let method: Method
        let body: Frame
        /// When it was read, and its deadline, on the monotonic clock in milliseconds.
        let arrived: Int64
        let deadline: Int64
        /// What its reply is counted under.
        let tag: CallTag
        /// The caller's key, with CURVE.
        var caller: CallerKey? = nil
    }

    /// What admission made of a call.
    enum Admission {
        /// The call runs, holding its idempotency key (nil: none applies).
        case run(idempotencyKey: String?)
        /// The call was answered (refused, or replayed), or waits for the first call with its key.
        case settled
    }

    /// Reads one request and either answers it at once or starts its handler.
    func handle(_ frames: [Frame], userID: String?, _ socket: Socket, _ state: LoopState) {
        counters.received.bump()
        let arrived = monotonicNanoseconds()
        // Authentication, then parse, then the role's check, then admission: an unknown key is
        // answered nothing, and a call refused at any step holds nothing.
        let caller: CallerKey?
        switch RoleCheck.sender(userID: userID, keys: state.keys) {
        case .open:
            caller = nil
        case .caller(let key):
            caller = key
        case .unknown:
            // ZAP admitted the key at the handshake; this catches one revoked since.
            counters.unauthenticated.bump()
            logger.debug("dropped a message from a key that is not allowed", ["key": userID ?? "none"])
            return
        }
        guard var call = parse(frames, userID: userID, socket, state, arrived: arrived) else { return }
        call.caller = caller
        if let caller, let denial = RoleCheck.denial(of: caller, path: call.method.path, callers: call.method.callers) {
            counters.permissionDenied.bump()
            send(socket, to: call.identity, requestID: call.header.requestId, Answer(code: .permissionDenied, message: denial), call.tag, state)
            return
        }
        guard case .run(let idempotencyKey) = admit(call, socket, state) else { return }
        dispatch(call, idempotencyKey: idempotencyKey, socket, state)
    }

    /// Splits a request into envelope, header and body and finds its method; answers (and
    /// returns nil for) what does not parse or names no method served here.
    private func parse(_ frames: [Frame], userID: String?, _ socket: Socket, _ state: LoopState, arrived: Int64) -> Incoming? {
        // Counted under the "" row until the header names a method served here.
        let unnamed = state.metrics.tag(
            method: "", arrived: arrived, requestBytes: frames.dropFirst().reduce(0) { $0 + $1.count })
        let identity: [[UInt8]], header: RequestHeader, body: Frame
        switch RequestFrames.read(frames) {
        case .dropped:
            counters.dropped.bump()
            return nil
        case let .refused(to, message):
            counters.malformed.bump()
            send(socket, to: to, requestID: 0, Answer(code: .invalidArgument, message: message), unnamed, state)
            return nil
        case let .request(envelope, requestHeader, requestBody):
            (identity, header, body) = (envelope, requestHeader, requestBody)
        }
        guard let method = state.methods[header.method] else {
            let answer = header.method.isEmpty
                ? Answer(code: .invalidArgument, message: "request header has no method")
                : Answer(
                    code: .unimplemented,
                    message: "unknown method \"\(header.method)\"; Health/Check lists the services served here")
            send(socket, to: identity, requestID: header.requestId, answer, unnamed, state)
            return nil
        }
        let now = monotonicMilliseconds()
        return Incoming(
            identity: identity, peer: userID.map { Array($0.utf8) } ?? identity[0], header: header, method: method, body: body,
            arrived: now, deadline: state.deadlines.deadline(arrivedAt: now, timeoutMilliseconds: header.timeoutMs),
            tag: state.metrics.tag(method: header.method, arrived: arrived, requestBytes: body.count))
    }

    /// Decides whether a parsed call runs, its layers in this order:
    /// 1. `AdmissionLimits.stopping`: while draining only inline calls (Health/Check) are taken;
    /// 2. `IdempotencyGate`: a mutating call's key is checked and looked up, and a finished call's
    ///    answer replayed (it costs nothing, so the limits do not apply to it);
    /// 3. `AdmissionLimits.capacity`: calls, bytes, the peer's calls and bytes (a waiter only calls);
    /// 4. only then the call waits on the running call with its key, or claims its key and runs.
    ///
    /// Parse, then admit, then claim: a call refused here holds nothing, so its retry with the
    /// same idempotency key runs (a key claimed before a busy refusal stayed "running" with no
    /// call to finish it, and every retry waited on it forever).
    private func admit(_ call: Incoming, _ socket: Socket, _ state: LoopState) -> Admission {
        func refuse(_ code: StatusCode, _ message: String, retryAfter: UInt32 = 0) -> Admission {
            send(socket, to: call.identity, requestID: call.header.requestId, Answer(
                code: code, message: message, retryAfter: retryAfter), call.tag, state)
            return .settled
        }
        func refuse(_ refusal: AdmissionLimits.Refusal) -> Admission {
            if refusal.busy { counters.rejectedBusy.bump() }
            return refuse(refusal.code, refusal.message, retryAfter: refusal.retryAfterMilliseconds)
        }
        if let refusal = state.limits.stopping(draining: state.draining, inline: call.method.isInline) {
            return refuse(refusal)
        }
        let key = state.gate.decide(
            method: call.header.method, idempotencyKey: call.header.idempotencyKey, mutating: call.method.mutating,
            now: call.arrived, in: &state.idempotency)
        switch key {
        case .refuse(let message):
            return refuse(.invalidArgument, message)
        case .replay(let outcome):
            // A stored answer costs nothing to send: no admission needed.
            counters.replayed.bump()
            send(socket, to: call.identity, requestID: call.header.requestId, Answer(replaying: outcome), call.tag, state)
            return .settled
        case .none, .wait, .claim:
            break
        }
        let peer = state.load(of: call.peer)
        let load = AdmissionLimits.Load(
            calls: state.inFlight.count + state.idempotency.waiterCount, bytes: state.inFlightBytes,
            peerCalls: peer.calls, peerBytes: peer.bytes)
        if let refusal = state.limits.capacity(load, requestBytes: call.body.count, waiting: key.waits) {
            return refuse(refusal)
        }
        switch key {
        case .wait(let key):
            // Answered when the running call finishes, or at this call's own deadline.
            counters.replayed.bump()
            state.idempotency.wait(key: key, .init(identity: call.identity, requestID: call.header.requestId, deadline: call.deadline, tag: call.tag))
            return .settled
        case .claim(let key):
            state.idempotency.claim(key: key)
            return .run(idempotencyKey: key)
        case .none, .refuse, .replay:
            return .run(idempotencyKey: nil)
        }
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
            metadata: metadata, caller: call.caller, peer: call.peer, deadlineMilliseconds: call.deadline, baseLogger: logger)
        let body = call.body
        func inFlight(_ task: Task<Void, Never>?, bytes: Int) -> InFlight {
            InFlight(
                identity: call.identity, peer: call.peer, requestID: header.requestId, deadline: call.deadline, method: header.method,
                idempotencyKey: idempotencyKey, task: task, bytes: bytes, tag: call.tag, undelivered: context.undelivered)
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
            // Counted in flight before its task can run: a handler that has begun is in the stats.
            state.add(ticket, inFlight(nil, bytes: body.count))
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
            state.setTask(task, of: ticket)
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
            complete(ticket, CallDeadlines.beforeStart(context.method))
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
}
