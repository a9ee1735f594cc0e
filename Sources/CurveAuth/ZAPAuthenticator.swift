import Foundation
import Runtime
import Locking
import ZMQ

/// The ZAP handler of one context: a thread with a REP socket bound at
/// `inproc://zeromq.zap.01`, answering every CURVE handshake of that context's servers from a
/// ``KeyTable`` (``ZAPHandler`` says how).
///
/// Start it before the servers accept connections and stop it after they close. A server should
/// also set `setZAPEnforceDomain(true)`: then, with no handler running, libzmq refuses every
/// client instead of letting CURVE clients in unauthenticated.
public final class ZAPAuthenticator: LifecycleService {
    /// The endpoint libzmq sends ZAP requests to (RFC 27).
    public static let endpoint = "inproc://zeromq.zap.01"

    public let name: String
    private let context: Context
    private let keys: KeyTable
    private let logger: Logger

    private struct Counts {
        var allowed = 0
        var refused = 0
    }

    private let counts = Locked(Counts())
    /// The thread of the latest ``start()``; nil before.
    private let running = Locked<SocketLoop?>(nil)

    /// A handler for `context` answering from `keys`; nothing runs before ``start()``.
    public init(context: Context, keys: KeyTable, logger: Logger, name: String = "zap") {
        self.context = context
        self.keys = keys
        self.logger = logger
        self.name = name
    }

    /// Handshakes allowed and refused so far.
    public var answered: (allowed: Int, refused: Int) {
        counts.withLock { ($0.allowed, $0.refused) }
    }

    /// Starts the thread and returns once its socket is bound; throws when it cannot bind (e.g.
    /// another handler already serves this context: EADDRINUSE).
    public func start() throws {
        let loop = try SocketLoop(name: name)
        try loop.start { [self] poller in try Steps(self, poller) }
        running.withLock { $0 = loop }
        logger.info("ZAP handler listening", ["endpoint": Self.endpoint, "keys": String(keys.count)])
    }

    /// Wakes the thread and waits for it to close its socket; safe to call twice, from several
    /// threads and before start.
    public func stop() {
        running.withLock { $0 }?.stop()
    }

    /// The handler's steps on its `SocketLoop`: the REP socket, answering until stopped or the
    /// context ends.
    private final class Steps: SocketLoopSteps {
        let handler: ZAPAuthenticator
        let socket: Socket
        let socketIndex: Int

        init(_ handler: ZAPAuthenticator, _ poller: Poller) throws {
            self.handler = handler
            socket = try Socket(handler.context, .rep)
            // A reply never waits long: libzmq reads it at once on its own thread.
            try socket.setSendTimeout(1000)
            try socket.bind(ZAPAuthenticator.endpoint)
            socketIndex = poller.add(socket, events: .in)
        }

        func pollTimeout() -> Int? { -1 }

        func turn(_ polled: Poller?) -> Bool {
            guard polled?.revents(socketIndex).contains(.in) ?? true else { return true }
            do {
                while let request = try socket.receive(dontWait: true) {
                    let (reply, outcome) = ZAPHandler.reply(to: request) { handler.keys.role(ofUserID: $0) }
                    try socket.send(reply)
                    handler.record(outcome, request: request)
                }
                return true
            } catch {
                pollFailed(error)
                return false
            }
        }

        func pollFailed(_ error: any Error) {
            if let error = error as? ZMQError, error.isTerminated { return }
            // Without the handler every handshake fails (with ZAP_ENFORCE_DOMAIN): say so loudly.
            handler.logger.critical("ZAP handler stopped; no client can connect until it restarts", ["error": "\(error)"])
        }

        func drain() {
            // zmq_close frees an inproc name later, on libzmq's reaper thread; unbinding frees it
            // now, so a handler started right after this one stops can bind it.
            try? socket.unbind(ZAPAuthenticator.endpoint)
            socket.close()
        }
    }

    private func record(_ outcome: ZAPHandler.Outcome, request: [[UInt8]]) {
        let address = String(decoding: request.count > 3 ? request[3] : [], as: UTF8.self)
        switch outcome {
        case let .allowed(key, role):
            counts.withLock { $0.allowed += 1 }
            let name = keys.entry(ofUserID: key)?.name ?? ""
            logger.debug("ZAP allowed", ["address": address, "key": key, "name": name, "role": role.rawValue])
        case let .unknownKey(key):
            counts.withLock { $0.refused += 1 }
            logger.notice("ZAP refused: key not allowed", ["address": address, "key": key])
        case let .mechanismRefused(mechanism):
            counts.withLock { $0.refused += 1 }
            logger.notice("ZAP refused: mechanism not allowed", ["address": address, "mechanism": mechanism])
        case let .malformed(reason):
            counts.withLock { $0.refused += 1 }
            logger.warning("ZAP refused: malformed request", ["address": address, "reason": reason])
        }
    }
}
