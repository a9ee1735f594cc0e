import CurveAuth
import Foundation
import Proto
import Runtime
import Locking
import ZMQ

/// Registering methods: each kind of dispatch, and decoding a request body where it was received.
extension RPCServer {
    /// Adds a method; every call decodes `Request`, runs `handler` and encodes its `Response`.
    ///
    /// - Parameters:
    ///   - method: The typed method, e.g. `ItemServiceRPC.createItem`.
    ///   - mutating: Whether idempotency keys apply; defaults to "not a read-only method".
    ///   - handler: Runs concurrently with other calls; throw an `RPCStatusError` (`RPCError`,
    ///     a store's refusal) for a status code.
    public func register<Request, Response>(
        _ method: ProtoMethod<Request, Response>,
        mutating: Bool? = nil,
        handler: @escaping @Sendable (Request, RPCContext) async throws -> Response
    ) {
        let limit = DecodingOptions(maxBytes: configuration.maxMessageBytes)
        add(method.callers, Method(path: method.path, mutating: mutating ?? !method.isReadOnly, dispatch: .pooled { bytes, context in
            MessageBody(encoding: try await handler(try Self.decode(Request.self, bytes, limit), context))
        }))
    }

    /// Adds a method whose request carries a large `bytes` field the handler can use where it
    /// lies in the received frame: at 64 KiB and up, field `largeBytesField` of the request is
    /// left empty and handed over as `FrameBytes` (nil when the field is small or absent, and
    /// then decoded into the request as usual). Saves a copy of a photo per call.
    public func register<Request, Response>(
        _ method: ProtoMethod<Request, Response>,
        largeBytesField: UInt32,
        mutating: Bool? = nil,
        handler: @escaping @Sendable (Request, FrameBytes?, RPCContext) async throws -> Response
    ) {
        let limit = DecodingOptions(maxBytes: configuration.maxMessageBytes)
        add(method.callers, Method(path: method.path, mutating: mutating ?? !method.isReadOnly, dispatch: .pooled { body, context in
            let decoded = try Self.decode(Request.self, body, limit, leavingLargeBytesField: largeBytesField)
            let bytes = decoded.field.map { FrameBytes(frame: body, range: $0) }
            return MessageBody(encoding: try await handler(decoded.message, bytes, context))
        }))
    }

    /// Adds a method answered on the I/O thread itself, with no hop to the task pool.
    ///
    /// Only for handlers that finish in microseconds and never block or wait (Health/Check):
    /// while one runs, the server reads and answers nothing else.
    public func registerInline<Request, Response>(
        _ method: ProtoMethod<Request, Response>,
        handler: @escaping @Sendable (Request, RPCContext) throws -> Response
    ) {
        let limit = DecodingOptions(maxBytes: configuration.maxMessageBytes)
        add(method.callers, Method(path: method.path, mutating: !method.isReadOnly, dispatch: .inline { bytes, context in
            MessageBody(encoding: try handler(try Self.decode(Request.self, bytes, limit), context))
        }))
    }

    /// The priority of pooled handlers, higher than the process's other tasks: on Linux each
    /// priority has its own threads (as many as cores), so background loops and CPU-bound work
    /// at the default priority (a cascade, a test suite sharing the process) cannot hold a call
    /// in the queue past its deadline. A deferred handler that starts a task of its own gives
    /// it this priority too.
    public static let handlerPriority = TaskPriority.high

    /// Adds a method whose work runs on a thread the service owns (a store's serial thread),
    /// which replies when done: no hop through the task pool, so two fewer thread wake-ups per
    /// call than `register`.
    ///
    /// `handler` is called on the I/O thread (for a request body over `ioThreadDecodeLimit`, on
    /// a pool thread, where that body is decoded): it must only hand the work over (enqueue it)
    /// and return; `reply` may then be called from any thread, exactly once. The reply is
    /// encoded where `reply` is called, so this suits small messages, not blob bodies. Work that
    /// waits in a queue should check `RPCContext.deadlinePassed` when it starts.
    public func registerDeferred<Request, Response>(
        _ method: ProtoMethod<Request, Response>,
        mutating: Bool? = nil,
        handler: @escaping @Sendable (
            Request, RPCContext, _ reply: @escaping @Sendable (Result<Response, any Error>) -> Void
        ) -> Void
    ) {
        registerDeferredEncoded(method, mutating: mutating) { request, context, reply in
            handler(request, context) { result in reply(result.map { MessageBody(encoding: $0) }) }
        }
    }

    /// `registerDeferred` for a handler that encodes its reply itself, e.g. into a frame it
    /// fills while reading the data from disk (`MessageBody(frame:)`): `reply` takes the body
    /// as it is sent.
    public func registerDeferredEncoded<Request, Response>(
        _ method: ProtoMethod<Request, Response>,
        mutating: Bool? = nil,
        handler: @escaping @Sendable (
            Request, RPCContext, _ reply: @escaping @Sendable (Result<MessageBody, any Error>) -> Void
        ) -> Void
    ) {
        let limit = DecodingOptions(maxBytes: configuration.maxMessageBytes)
        add(method.callers, Method(path: method.path, mutating: mutating ?? !method.isReadOnly, dispatch: .deferred { bytes, context, reply in
            do {
                handler(try Self.decode(Request.self, bytes, limit), context, reply)
            } catch {
                reply(.failure(error))
            }
        }))
    }

    private func add(_ callers: [Caller], _ method: Method) {
        var method = method
        // A method the .proto declares is allowed to whom it says, whatever handle registered it.
        method.callers = MethodRoles.declared(method.path) ?? callers
        shared.withLock {
            precondition(!$0.started, "register \(method.path) before start()")
            $0.methods[method.path] = method
        }
    }

    /// Decodes a request body where the socket received it (no copy of a large photo).
    private static func decode<Request: ProtoMessage>(
        _ type: Request.Type, _ body: Frame, _ limit: DecodingOptions
    ) throws(RPCError) -> Request {
        try refusingBadBody { () throws(ProtoDecodingError) in try Request(frame: body, options: limit) }
    }

    /// `decode` leaving a large bytes field where it lies (see `register(_:largeBytesField:…)`).
    private static func decode<Request: ProtoMessage>(
        _ type: Request.Type, _ body: Frame, _ limit: DecodingOptions, leavingLargeBytesField field: UInt32
    ) throws(RPCError) -> (message: Request, field: Range<Int>?) {
        try refusingBadBody { () throws(ProtoDecodingError) in
            try body.withUnsafeBytes { buffer throws(ProtoDecodingError) in
                try Request.decode(buffer, options: limit, leavingLargeBytesField: field)
            }
        }
    }

    /// A request body that does not decode is the caller's error: INVALID_ARGUMENT, saying why.
    private static func refusingBadBody<T>(_ decode: () throws(ProtoDecodingError) -> T) throws(RPCError) -> T {
        do {
            return try decode()
        } catch {
            throw RPCError.invalidArgument("request body: \(error)")
        }
    }

    /// The full names of the services with registered methods.
    public var serviceNames: [String] {
        shared.withLock { Self.serviceNames(of: $0.methods) }
    }

    static func serviceNames(of methods: [String: Method]) -> [String] {
        Set(methods.keys.compactMap { path -> String? in
            let parts = path.split(separator: "/")
            return parts.count == 2 ? String(parts[0]) : nil
        }).sorted()
    }
}
