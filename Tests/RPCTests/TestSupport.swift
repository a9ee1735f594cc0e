import Foundation
import Proto
import RPC
import Runtime
import Locking
import ZMQ

/// Counts handler invocations across tasks.
final class CallCounter: Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// A context per test process; sockets are per test.
let testContext = try! Context(ioThreads: 1)

/// Logs of the tests go nowhere unless HOMEPWNER_TEST_LOGS is set.
let testLogger = Logger(
    label: "test", level: ProcessInfo.processInfo.environment["HOMEPWNER_TEST_LOGS"] == nil ? .critical : .debug)

/// This process's ipc socket files, in one folder removed when the process exits (a socket
/// closed just before exit may not have been unlinked yet).
let ipcFolder: String = {
    let path = NSTemporaryDirectory() + "hp-test-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "hp-test-\(getpid())") }
    return path
}()

/// A unique endpoint per call: inproc, or an ipc socket in ``ipcFolder``.
func uniqueEndpoint(_ transport: String = "inproc") -> String {
    let id = UUID().uuidString.prefix(8).lowercased()
    switch transport {
    case "ipc": return "ipc://\(ipcFolder)/\(id).sock"
    case "tcp": return "tcp://127.0.0.1:*"
    default: return "inproc://test-\(id)"
    }
}

/// A server with an echo-like CreateItem handler and a slow GetItem handler, started.
func makeServer(
    endpoint: String = uniqueEndpoint(), maxMessageBytes: Int = Defaults.maxMessageBytes, maxInFlight: Int = 1024,
    calls: CallCounter? = nil
) throws -> RPCServer {
    let server = try RPCServer(
        context: testContext,
        configuration: .init(
            endpoints: [endpoint], processName: "test-server", maxMessageBytes: maxMessageBytes,
            maxInFlight: maxInFlight),
        logger: testLogger)
    registerTestMethods(server, calls: calls)
    try server.start()
    return server
}

/// CreateItem echoes name and value into an Item (counting invocations); GetItem sleeps
/// `value` ms when the key is "sleep:<ms>", fails NOT_FOUND for "missing", RESOURCE_EXHAUSTED
/// with reason DISK_FULL for "full", throws a plain error for "boom".
func registerTestMethods(_ server: RPCServer, calls: CallCounter?) {
    server.register(ItemServiceRPC.createItem) { request, _ in
        calls?.increment()
        guard !request.name.isEmpty else { throw RPCError.invalidArgument("name must not be empty") }
        var item = Item()
        item.key = UUID().uuidString.lowercased()
        item.name = request.name
        item.valueInDollars = request.valueInDollars
        return item
    }
    server.register(ItemServiceRPC.getItem) { request, _ in
        if request.key.hasPrefix("sleep:"), let ms = Int(request.key.dropFirst(6)) {
            try await Task.sleep(for: .milliseconds(ms))
        }
        if request.key == "missing" { throw RPCError.notFound("item \"missing\" not found") }
        if request.key == "full" { throw RPCError.diskFull("the test store's disk is full") }
        if request.key == "boom" { throw CocoaError(.fileNoSuchFile) }
        var item = Item()
        item.key = request.key
        return item
    }
}

/// A raw socket peer for sending malformed frames.
final class RawPeer {
    let socket: Socket

    init(_ type: SocketType, endpoint: String) throws {
        socket = try Socket(testContext, type)
        try socket.connect(endpoint)
    }

    deinit { socket.close() }

    func send(_ frames: [[UInt8]]) throws { try socket.send(frames) }

    /// The next reply's header, or nil when none came within `timeoutMilliseconds`.
    /// Polls without blocking: a blocked thread would starve the 2-thread cooperative pool
    /// that also runs the server's handlers.
    func receiveHeader(timeoutMilliseconds: Int = 30_000) async throws -> (ResponseHeader, [[UInt8]])? {
        let deadline = ContinuousClock.now + .milliseconds(timeoutMilliseconds)
        var received = try socket.receive(dontWait: true)
        while received == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
            // Looked at once more after the deadline: a task resumed late (a busy pool) still
            // finds a reply that arrived in time.
            received = try socket.receive(dontWait: true)
        }
        guard let frames = received else { return nil }
        let headerIndex = socket.type == .req ? 0 : 1
        guard frames.count > headerIndex else { return nil }
        return (try ResponseHeader(serializedBytes: frames[headerIndex]), frames)
    }
}

func requestHeader(_ method: String, id: UInt64 = 7, timeout: UInt32 = 0, key: String = "") -> [UInt8] {
    var header = RequestHeader()
    header.method = method
    header.requestId = id
    header.timeoutMs = timeout
    header.idempotencyKey = key
    return header.serializedBytes()
}

/// Health over a fresh client: proof that the server still answers.
func healthy(_ endpoint: String) async throws -> Bool {
    let client = try RPCClient(context: testContext, endpoint: endpoint)
    defer { client.close() }
    let response = try await client.call(HealthRPC.check, HealthCheckRequest())
    return response.status == .serving
}


/// Holds handlers until opened; they wait without a thread (and without seeing cancellation,
/// like a handler stuck in a store).
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withVisibleCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// How many wait now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Handlers waiting now.
    var waiting: Int { state.withLock { $0.waiting.count } }

    /// Returns once `count` handlers wait (or throws after 30 s).
    func waitUntilWaiting(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while waiting < count {
            guard ContinuousClock.now < deadline else { throw GateError.notReached(waiting: waiting, wanted: count) }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    enum GateError: Error { case notReached(waiting: Int, wanted: Int) }
}

/// Polls `condition` every 2 ms for up to 30 s; whether it became true.
func eventually(_ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition() {
        guard ContinuousClock.now < deadline else { return condition() }
        try await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// A server whose CreateItem (mutating) echoes the name, counting calls, and waits at `gate`
/// first when the name starts with "gate"; GetItem (read-only) waits at `gate` when its key
/// starts with "gate".
func gatedServer(
    _ gate: Gate, calls: CallCounter, endpoint: String = uniqueEndpoint(),
    configure: (inout RPCServer.Configuration) -> Void = { _ in }
) throws -> RPCServer {
    var configuration = RPCServer.Configuration(endpoints: [endpoint], processName: "test-server")
    configure(&configuration)
    let server = try RPCServer(context: testContext, configuration: configuration, logger: testLogger)
    server.register(ItemServiceRPC.createItem) { request, _ in
        if request.name.hasPrefix("gate") { await gate.wait() }
        calls.increment()
        var item = Item()
        item.name = request.name
        return item
    }
    server.register(ItemServiceRPC.getItem) { request, _ in
        if request.key.hasPrefix("gate") { await gate.wait() }
        var item = Item()
        item.key = String(request.key.prefix(8))
        return item
    }
    try server.start()
    return server
}

func createItem(_ name: String) -> CreateItemRequest {
    var request = CreateItemRequest()
    request.name = name
    return request
}

func getItem(_ key: String) -> GetItemRequest {
    var request = GetItemRequest()
    request.key = key
    return request
}
