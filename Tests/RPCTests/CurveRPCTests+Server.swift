import CurveAuth
import Foundation
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport
import TestSupport
import ZMQ

/// The secured server's safeguards: a broken allowed-keys file in health and stats, the handshake timeout, binding without keys, and each key's share of the calls in flight.
extension CurveRPCTests {
    @Test func anAllowedKeysFileThatFailsToLoadIsReportedInHealthAndStatsUntilFixed() async throws {
        let suite = try SecuredServer()
        let admin = try suite.client(suite.admin)
        defer { admin.close() }
        let healthy = try await admin.call(HealthRPC.check, HealthCheckRequest(), options: Self.once)
        #expect(healthy.conditions.isEmpty)

        // A revocation saved with a typo on line 2: the old keys stay, and that is visible.
        let text = try String(contentsOfFile: suite.allowedFile, encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[1] = "writer " + lines[1].split(separator: " ", omittingEmptySubsequences: true).dropFirst().joined(separator: " ")
        try lines.joined(separator: "\n").write(toFile: suite.allowedFile, atomically: true, encoding: .utf8)
        #expect(!suite.keys.reloadIfChanged())
        let degraded = try await admin.call(HealthRPC.check, HealthCheckRequest(), options: Self.once)
        #expect(degraded.status == .serving)
        #expect(degraded.conditions.map(\.name) == ["allowed_keys"])
        let message = degraded.conditions.first?.message ?? ""
        #expect(message.contains("\(suite.allowedFile):2: unknown role 'writer'"), "\(message)")
        #expect(degraded.conditions.first.map { $0.sinceUnixMs > 0 } == true)
        let stats = try await admin.call(MetricsRPC.stats, ProcessStatsRequest(), options: Self.once)
        #expect(stats.conditions.map(\.name) == ["allowed_keys"])
        #expect(stats.figures.contains { $0.name == "homepwner_health_condition" && $0.labels.first?.value == "allowed_keys" && $0.value == 1 })

        // Fixed: back to healthy.
        try text.write(toFile: suite.allowedFile, atomically: true, encoding: .utf8)
        #expect(suite.keys.reloadIfChanged())
        #expect(try await admin.call(HealthRPC.check, HealthCheckRequest(), options: Self.once).conditions.isEmpty)
    }

    @Test func aConnectionThatNeverHandshakesIsClosedAfterTheHandshakeTimeout() async throws {
        let suite = try SecuredServer(handshakeTimeoutMilliseconds: 300)
        let port = try #require(UInt16(suite.endpoint.split(separator: ":").last ?? ""))
        // libzmq's default would hold this silent connection 30 s: the read below would time out.
        let (bytes, closed) = try await onThread {
            let silent = try TestHTTPClient(port: port, readTimeoutSeconds: 10)
            let bytes = try silent.readToEnd()
            return (bytes, true)
        }
        #expect(closed)
        // What the server sent before closing is at most its ZMTP greeting.
        #expect(bytes.count <= 64)
        #expect(RPCServer.Configuration(endpoints: [], processName: "x").handshakeTimeoutMilliseconds == 5000)
    }

    @Test func aServerWithoutKeysRefusesToBindBeyondLoopbackUnlessInsecure() throws {
        let context = try Context(ioThreads: 1)
        let open = try RPCServer(context: context, configuration: .init(endpoints: ["tcp://0.0.0.0:*"], processName: "open"), logger: testLogger)
        do {
            try open.start()
            open.stop()
            Issue.record("bound 0.0.0.0 without keys")
        } catch {
            let message = "\(error)"
            #expect(message.contains("refusing to bind tcp://0.0.0.0:*"), "\(message)")
            #expect(message.contains("homepwner keys init") && message.contains("--insecure"), "\(message)")
        }
        open.stop()
        // Loopback, ipc and inproc need no keys.
        for endpoint in ["tcp://127.0.0.1:*", "tcp://localhost:0", "tcp://[::1]:5551", "ipc:///tmp/x.sock", "inproc://x", "tcp://lo:5551"] {
            #expect(TransportSecurity.isLocal(endpoint), "\(endpoint)")
        }
        for endpoint in ["tcp://*:5551", "tcp://0.0.0.0:5551", "tcp://10.0.0.5:5551", "tcp://eth0:5551", "tcp://[::]:5551", "tcp://127.0.0.1.evil:1", "udp://127.0.0.1:1"] {
            #expect(!TransportSecurity.isLocal(endpoint), "\(endpoint)")
        }
        // --insecure: it serves, and says so in the log.
        let insecureContext = try Context(ioThreads: 1)
        TransportSecurity(insecure: true).install(on: insecureContext)
        let collector = LogCollector()
        let logger = Logger(label: "insecure", level: .info, sink: .collecting(collector))
        let server = try RPCServer(context: insecureContext, configuration: .init(endpoints: ["tcp://0.0.0.0:*"], processName: "insecure"), logger: logger)
        try server.start()
        server.stop()
        #expect(collector.lines.contains { $0.contains("WITHOUT authentication") })
    }

    @Test func twoConnectionsOfOneKeyShareOnePeersLimit() async throws {
        let suite = try SecuredServer(maxInFlightPerPeer: 4)
        let (context, sockets) = try suite.connections(of: suite.worker, count: 2)
        defer { sockets.forEach { $0.close() } }
        // Three slow calls on each connection: six of one key, whose share is four.
        for (index, socket) in sockets.enumerated() {
            for call in 0..<3 {
                let id = UInt64(index * 10 + call + 1)
                try socket.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: id, timeout: 30_000), getItem("sleep:1500").serializedBytes()])
            }
        }
        var refused = 0
        var served = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while refused + served < 6 && ContinuousClock.now < deadline {
            for socket in sockets {
                while let frames = try socket.receive(dontWait: true) {
                    let header = try ResponseHeader(serializedBytes: frames[1])
                    if header.code == StatusCode.resourceExhausted.rawValue { refused += 1 } else if header.code == 0 { served += 1 }
                }
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(refused == 2 && served == 4, "refused \(refused), served \(served)")
        _ = context
    }

    /// Fair sharing by key: one key flooding over two connections holds no more than its share
    /// of the calls in flight, so another key's calls are all served within their deadline.
    @Test func aFloodFromOneKeyOnTwoConnectionsLeavesAnotherKeysCallsWithinTheirDeadline() async throws {
        let suite = try SecuredServer(maxInFlight: 64, maxInFlightPerPeer: 16)
        let (context, sockets) = try suite.connections(of: suite.worker, count: 2)
        defer { sockets.forEach { $0.close() } }
        // 200 calls that outlast the test: without the per-key share they would take all 64
        // places (32 per connection with a per-connection one) and the reader would be refused.
        for id in 1...200 {
            let socket = sockets[id % 2]
            try socket.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: UInt64(id), timeout: 60_000), getItem("sleep:8000").serializedBytes()])
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while suite.server.stats.inFlight < 16 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(suite.server.stats.inFlight == 16)

        let reader = try suite.client(suite.reader)
        defer { reader.close() }
        var elapsed: [Duration] = []
        for n in 0..<50 {
            let started = ContinuousClock.now
            let item = try await reader.call(ItemServiceRPC.getItem, getItem("call-\(n)"), options: .init(timeoutMilliseconds: 2000, retry: .none))
            elapsed.append(ContinuousClock.now - started)
            #expect(item.key == "call-\(n)")
        }
        elapsed.sort()
        #expect(elapsed[48] < .milliseconds(2000), "p99 \(elapsed[48])")
        #expect(suite.server.stats.inFlight == 16, "the flood's key holds its share, no more")
        _ = context
    }
}
