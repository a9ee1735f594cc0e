import CurveAuth
import Foundation
import Proto
import RPC
import Runtime
import Locking
import Synchronization
import ZMQ

/// Health/Check through the RPC runtime vs the same frames echoed by bare libzmq, and the same
/// runtime with CURVE (encryption, the ZAP handshake and the per-message key check).
enum RPCBenchmark {
    struct Result {
        let name: String
        let inFlight: Int
        let calls: Int
        let seconds: Double
        let latencies: [Double]  // microseconds, sorted

        var perSecond: Double { Double(calls) / seconds }
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
    }

    static func run(_ arguments: [String]) async {
        var seconds = 5.0
        if let index = arguments.firstIndex(of: "--seconds"), index + 1 < arguments.count,
            let value = Double(arguments[index + 1]) { seconds = value }
        do {
            let context = try Context(ioThreads: 1)
            var request = RequestHeader()
            request.method = HealthRPC.check.path
            request.requestId = 1
            let frames: [[UInt8]] = [[], request.serializedBytes(), HealthCheckRequest().serializedBytes()]

            // `--only inline32` (bare1, inline1, pooled1, bare32, …) runs one variant once, for profilers.
            if let index = arguments.firstIndex(of: "--only"), index + 1 < arguments.count {
                let only = arguments[index + 1]
                let inFlight = only.hasSuffix("32") ? 32 : 1
                let result: Result
                switch only.dropLast(inFlight == 32 ? 2 : 1) {
                case "bare": result = try bareEcho(context: context, frames: frames, inFlight: inFlight, seconds: seconds)
                case "inline": result = try await rpc(context: context, inFlight: inFlight, seconds: seconds, pooled: false)
                case "pooled": result = try await rpc(context: context, inFlight: inFlight, seconds: seconds, pooled: true)
                default:
                    FileHandle.standardError.write(Data("--only: one of bare1, inline1, pooled1, bare32, inline32, pooled32\n".utf8))
                    exit(2)
                }
                print("\(result.name), \(inFlight) in flight: \(result.calls) calls, \(Int(result.perSecond)) calls/s")
                return
            }
            // Short interleaved rounds, so the baseline and the runtime see the same machine
            // (this box is shared and noisy); each figure is the median round.
            let curve = try CurveSuite()
            defer { curve.close() }
            var results: [Result] = []
            let rounds = 5
            let round = seconds / Double(rounds)
            for inFlight in [1, 32] {
                var bare: [Result] = [], inline: [Result] = [], pooled: [Result] = []
                var curveInline: [Result] = [], curvePooled: [Result] = []
                for _ in 0..<rounds {
                    bare.append(try bareEcho(context: context, frames: frames, inFlight: inFlight, seconds: round))
                    inline.append(try await rpc(context: context, inFlight: inFlight, seconds: round, pooled: false))
                    curveInline.append(try await rpc(context: curve.context, inFlight: inFlight, seconds: round, pooled: false, label: " with CURVE"))
                    pooled.append(try await rpc(context: context, inFlight: inFlight, seconds: round, pooled: true))
                    curvePooled.append(try await rpc(context: curve.context, inFlight: inFlight, seconds: round, pooled: true, label: " with CURVE"))
                }
                results += [median(bare), median(inline), median(curveInline), median(pooled), median(curvePooled)]
            }
            report(results)
        } catch {
            FileHandle.standardError.write(Data("rpc benchmark failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The runtime: an RPCServer and an RPCClient with `inFlight` concurrent callers, calling
    /// Health/Check (answered on the server's I/O thread) or, `pooled`, a trivial GetItem
    /// handler that runs as a task on the concurrency pool like every service method.
    static func rpc(context: Context, inFlight: Int, seconds: Double, pooled: Bool, label: String = "") async throws -> Result {
        let logger = Logger(label: "bench", level: .error)
        let server = try RPCServer(
            context: context, configuration: .init(endpoints: ["tcp://127.0.0.1:*"], processName: "bench"), logger: logger)
        server.register(ItemServiceRPC.getItem) { request, _ in
            var item = Item()
            item.key = request.key
            return item
        }
        try server.start()
        defer { server.stop() }
        var getItem = GetItemRequest()
        getItem.key = "5e0c4a4e-6f1f-4b59-9d55-2b1f0c3f3a11"
        let itemRequest = getItem
        let client = try RPCClient(context: context, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        _ = try await client.call(HealthRPC.check, HealthCheckRequest())  // connect and warm up
        let end = monotonicSeconds() + seconds
        let start = monotonicSeconds()
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    var samples: [Double] = []
                    samples.reserveCapacity(200_000)
                    while monotonicSeconds() < end {
                        let t0 = monotonicSeconds()
                        if pooled {
                            _ = try await client.call(ItemServiceRPC.getItem, itemRequest)
                        } else {
                            _ = try await client.call(HealthRPC.check, HealthCheckRequest())
                        }
                        samples.append((monotonicSeconds() - t0) * 1e6)
                    }
                    return samples
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let elapsed = monotonicSeconds() - start
        return Result(
            name: (pooled ? "RPC runtime, pooled handler (GetItem)" : "RPC runtime (Health/Check, inline)") + label,
            inFlight: inFlight, calls: latencies.count, seconds: elapsed,
            latencies: latencies.sorted())
    }

    /// A context whose servers and clients speak CURVE as a deployment's do: the server key pair,
    /// an allowed-keys file listing the client's key as admin, the ZAP handler running.
    final class CurveSuite {
        let context: Context
        private let folder: String
        private let zap: ZAPAuthenticator

        init() throws {
            folder = NSTemporaryDirectory() + "hp-bench-curve-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let server = try CurveKeyPair.generate(), client = try CurveKeyPair.generate()
            _ = try AllowedKeys.edit(file: folder + "/allowed_keys", create: true) { keys in
                try keys.allow(AllowedKey(role: .admin, publicKey: client.publicKey, name: "bench"))
            }
            let logger = Logger(label: "bench", level: .error)
            let keys = try KeyTable(file: folder + "/allowed_keys", logger: logger)
            context = try Context(ioThreads: 1)
            TransportSecurity(server: .init(keyPair: server, keys: keys), client: .init(keyPair: client, serverKey: server.publicKey))
                .install(on: context)
            zap = ZAPAuthenticator(context: context, keys: keys, logger: logger)
            try zap.start()
        }

        func close() {
            zap.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// Bare libzmq: a ROUTER thread echoing every message, a DEALER keeping `inFlight` outstanding.
    static func bareEcho(context: Context, frames: [[UInt8]], inFlight: Int, seconds: Double) throws -> Result {
        let endpoint = Locked<String?>(nil)
        let echo = try SocketLoop(name: "bare-echo")
        try echo.start { poller in
            let steps = try EchoSteps(context, poller)
            endpoint.withLock { $0 = steps.endpoint }
            return steps
        }
        defer { echo.stop() }
        guard let address = endpoint.withLock({ $0 }) else { throw RPCError.unavailable("echo server did not bind") }
        let dealer = try Socket(context, .dealer)
        defer { dealer.close() }
        try dealer.connect(address)
        try dealer.send(frames)
        _ = try dealer.receive()  // connected and warm

        var latencies: [Double] = []
        latencies.reserveCapacity(500_000)
        var sentAt: [Double] = []  // FIFO: the echo answers in order
        var head = 0
        let start = monotonicSeconds()
        let end = start + seconds
        for _ in 0..<inFlight {
            sentAt.append(monotonicSeconds())
            try dealer.send(frames)
        }
        while true {
            _ = try dealer.receive()
            let now = monotonicSeconds()
            latencies.append((now - sentAt[head]) * 1e6)
            head += 1
            if now < end {
                sentAt.append(now)
                try dealer.send(frames)
            } else if head == sentAt.count {
                break
            }
        }
        let elapsed = monotonicSeconds() - start
        return Result(
            name: "bare libzmq ROUTER/DEALER echo", inFlight: inFlight, calls: latencies.count, seconds: elapsed,
            latencies: latencies.sorted())
    }

    /// The bare echo's thread: a ROUTER socket sending back every message it receives.
    private final class EchoSteps: SocketLoopSteps {
        let router: Socket
        let routerIndex: Int
        let endpoint: String?

        init(_ context: Context, _ poller: Poller) throws {
            router = try Socket(context, .router)
            try router.bind("tcp://127.0.0.1:*")
            endpoint = try? router.lastEndpoint
            routerIndex = poller.add(router, events: .in)
        }

        func pollTimeout() -> Int? { -1 }

        func turn(_ polled: Poller?) -> Bool {
            guard polled?.revents(routerIndex).contains(.in) ?? true else { return true }
            while let message = try? router.receive(dontWait: true) { _ = try? router.send(message) }
            return true
        }

        func drain() { router.close() }
    }

    /// The round with the median throughput.
    static func median(_ rounds: [Result]) -> Result {
        rounds.sorted { $0.perSecond < $1.perSecond }[rounds.count / 2]
    }

    static func report(_ results: [Result]) {
        func f(_ x: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", x) }
        print("| in flight | what | calls/s | p50 µs | p99 µs | ratio to bare |")
        print("|---|---|---|---|---|---|")
        for inFlight in [1, 32] {
            let pair = results.filter { $0.inFlight == inFlight }
            guard let bare = pair.first(where: { $0.name.hasPrefix("bare") }) else { continue }
            for result in pair {
                print("| \(inFlight) | \(result.name) | \(f(result.perSecond)) | \(f(result.percentile(0.5), 1)) | "
                    + "\(f(result.percentile(0.99), 1)) | \(f(result.perSecond / bare.perSecond, 2)) |")
            }
        }
    }
}

func monotonicSeconds() -> Double {
    Double(monotonicNanoseconds()) / 1e9
}
