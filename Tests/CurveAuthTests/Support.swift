import CurveAuth
import Foundation
import Locking
import Runtime
import Testing
import ZMQ

/// A fresh folder under the system temp directory, removed on deinit.
final class TemporaryFolder: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("curveauth-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` inside the folder.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` with `mode`; returns the path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o644) throws -> String {
        let path = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }
}

/// A failure inside a helper thread, thrown back to the test.
struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` on a thread of its own (its sockets live and die there) and hands back what it
/// returns or throws, without holding a thread of the shared pool meanwhile.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withVisibleCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Polls `condition` every 10 ms for up to `seconds`; whether it came true. On a plain thread.
func waitUntil(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A logger whose lines tests can read.
func collectingLogger(_ label: String = "curveauth-test") -> (Logger, LogCollector) {
    let collector = LogCollector()
    return (Logger(label: label, level: .debug, sink: .collecting(collector)), collector)
}

/// A socket whose blocking calls give up after `timeout` ms.
func makeSocket(_ context: Context, _ type: SocketType, timeout: Int32 = 3000) throws -> Socket {
    let socket = try Socket(context, type)
    try socket.setReceiveTimeout(timeout)
    try socket.setSendTimeout(timeout)
    return socket
}

/// A CURVE ROUTER with `keys` bound to `tcp://127.0.0.1:*`, in ZAP domain "homepwner";
/// `enforce` sets ZAP_ENFORCE_DOMAIN.
func curveServer(_ context: Context, keys: CurveKeyPair, enforce: Bool = true) throws -> (socket: Socket, endpoint: String) {
    let router = try makeSocket(context, .router)
    try router.setCurveServer(secretKey: keys.secretKey)
    try router.setZAPDomain("homepwner")
    try router.setZAPEnforceDomain(enforce)
    try router.bind("tcp://127.0.0.1:*")
    return (router, try router.lastEndpoint)
}

/// A DEALER connected to `endpoint`: a CURVE client of `serverKey` with `keys`, or a NULL
/// (no security) client when `keys` is nil.
func client(_ context: Context, _ endpoint: String, serverKey: String, keys: CurveKeyPair?) throws -> Socket {
    let dealer = try makeSocket(context, .dealer)
    if let keys { try dealer.setCurveClient(serverKey: serverKey, publicKey: keys.publicKey, secretKey: keys.secretKey) }
    try dealer.connect(endpoint)
    return dealer
}

/// The handshake events of a server, on a PAIR connected to its monitor.
func handshakeMonitor(_ context: Context, of socket: Socket) throws -> Socket {
    let endpoint = "inproc://monitor-\(UUID().uuidString)"
    try socket.monitor(endpoint: endpoint, events: [.handshakeSucceeded, .handshakeFailedAuth, .handshakeFailedProtocol, .handshakeFailedNoDetail])
    let pair = try makeSocket(context, .pair)
    try pair.connect(endpoint)
    return pair
}

/// The next handshake event of a kind in `wanted`, skipping others; throws when none comes in time.
func nextEvent(_ wanted: MonitorEvents, on monitor: Socket) throws -> MonitorEvent {
    while true {
        guard let frames = try monitor.receive(), let event = MonitorEvent(frames: frames) else {
            throw Failure("no monitor event")
        }
        if wanted.contains(event.event) { return event }
    }
}

/// Receives one message on `router` with its User-Id: the payload (after the routing id), or
/// nil when nothing arrives within the socket's timeout.
func receivePayload(_ router: Socket) throws -> (payload: String, userID: String?)? {
    do {
        guard let (frames, userID) = try router.receiveFramesWithUserID() else { return nil }
        return (String(decoding: frames.dropFirst().flatMap(\.bytes), as: UTF8.self), userID)
    } catch {
        if let error = error as? ZMQError, error.isAgain { return nil }
        throw error
    }
}

/// An allowed-keys file in `folder` listing `entries`, and a table loaded from it.
func keyTable(in folder: TemporaryFolder, _ entries: [AllowedKey], logger: Logger) throws -> KeyTable {
    var keys = AllowedKeys()
    for entry in entries { try keys.allow(entry) }
    let file = folder.file("allowed_keys")
    try keys.save(file: file)
    return try KeyTable(file: file, logger: logger)
}
