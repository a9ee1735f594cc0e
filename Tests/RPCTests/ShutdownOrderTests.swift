import Dispatch
import Foundation
import Proto
import RPC
import Runtime
import Locking
import Testing
import RPCTestSupport

/// A store that refuses once closed, as ImageStore does (9 FAILED_PRECONDITION).
final class ClosingStore: Sendable {
    private let open = Locked(true)

    func close() { open.withLock { $0 = false } }

    func check() throws {
        guard open.withLock({ $0 }) else { throw RPCError.failedPrecondition("the store is closed (stopping)") }
    }
}

/// The store of a composition: opened before the host, closed after it; it takes a moment to
/// close (it finishes what it has queued).
struct ClosingStoreService: LifecycleService {
    let store: ClosingStore
    var name: String { "store" }

    func start() {}

    func stop() {
        store.close()
        usleep(300_000)
    }
}

/// Stopping a part: its host refuses calls UNAVAILABLE before its stores close, and none meets a closed store.
@Suite struct ShutdownOrderTests {
    static let getPath = ItemServiceRPC.getItem.path

    @Test func callArrivingWhileTheHostStopsGetsUnavailableAndTheCallInFlightFinishes() async throws {
        // A grace far longer than the test: a loaded CI machine once took over 5 s between the
        // stop and the gate's opening, and the call in flight was answered 14 by the grace's end.
        let host = try ServiceHost(
            name: "store-service", context: testContext, rpcEndpoints: [uniqueEndpoint("ipc")], stopGraceMilliseconds: 120_000,
            logger: testLogger)
        let store = ClosingStore()
        let gate = Gate()
        defer { gate.open() }
        host.server.register(ItemServiceRPC.getItem) { request, _ in
            if request.key == "gate" { await gate.wait() }
            try store.check()
            var item = Item()
            item.key = request.key
            return item
        }
        let composition = ServiceComposition([ClosingStoreService(store: store), host])
        try composition.start()
        let peer = try RawPeer(.dealer, endpoint: host.rpcEndpoints[0])
        try peer.send([[], requestHeader(Self.getPath, id: 1, timeout: 30_000), getItem("gate").serializedBytes()])
        try await gate.waitUntilWaiting(1)

        let stopped = Locked(false), draining = Locked(false)
        host.server.onDrain { draining.withLock { $0 = true } }
        Thread {
            composition.stop()
            stopped.withLock { $0 = true }
        }.start()
        // The host's stop has begun its drain: a call read from now on is refused.
        #expect(try await eventually { draining.withLock { $0 } })
        #expect(host.server.servingStatus == .notServing)
        try peer.send([[], requestHeader(Self.getPath, id: 2, timeout: 5000), getItem("late").serializedBytes()])
        let (late, _) = try #require(try await peer.receiveHeader())
        #expect(late.requestId == 2)
        #expect(late.code == StatusCode.unavailable.rawValue)
        #expect(late.message == "store-service is stopping and takes no new calls; retry later")

        // The call in flight finishes against the open store, then the store closes.
        gate.open()
        let (first, frames) = try #require(try await peer.receiveHeader())
        #expect(first.requestId == 1 && first.code == 0)
        #expect(try Item(serializedBytes: frames[2]).key == "gate")
        #expect(try await eventually { stopped.withLock { $0 } })
    }

    @Test func callStillRunningWhenTheGraceTimeEndsIsAnsweredUnavailableNotByTheClosedStore() async throws {
        let server = try RPCServer(
            context: testContext, configuration: .init(endpoints: [uniqueEndpoint("ipc")], processName: "store-service"),
            logger: testLogger)
        defer { server.stop() }
        let store = ClosingStore()
        let gate = Gate()
        defer { gate.open() }
        server.register(ItemServiceRPC.getItem) { _, _ in
            await gate.wait()
            try store.check()
            return Item()
        }
        try server.start()
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[], requestHeader(Self.getPath, id: 1, timeout: 30_000), []])
        try await gate.waitUntilWaiting(1)
        #expect(!server.drain(timeoutMilliseconds: 100))
        let (abandoned, _) = try #require(try await peer.receiveHeader())
        #expect(abandoned.requestId == 1 && abandoned.code == StatusCode.unavailable.rawValue)
        #expect(abandoned.message == "store-service stopped before \(Self.getPath) finished; it may have run")
        // The store closes; the handler then fails against it, and that answer goes nowhere.
        store.close()
        gate.open()
        #expect(try await eventually { server.stats.inFlight == 0 })
        #expect(try await peer.receiveHeader(timeoutMilliseconds: 300) == nil)
    }

    @Test func healthAnswersNotServingWhileTheHostDrains() async throws {
        // A grace far longer than the test: a loaded CI machine once took over 5 s between the
        // stop and the gate's opening, and the call in flight was answered 14 by the grace's end.
        let host = try ServiceHost(
            name: "store-service", context: testContext, rpcEndpoints: [uniqueEndpoint("ipc")], stopGraceMilliseconds: 120_000,
            logger: testLogger)
        let gate = Gate()
        defer { gate.open() }
        host.server.register(ItemServiceRPC.getItem) { _, _ in
            await gate.wait()
            return Item()
        }
        try host.start()
        let peer = try RawPeer(.dealer, endpoint: host.rpcEndpoints[0])
        try peer.send([[], requestHeader(Self.getPath, id: 1, timeout: 30_000), []])
        try await gate.waitUntilWaiting(1)
        let stopped = Locked(false)
        Thread {
            host.stop()
            stopped.withLock { $0 = true }
        }.start()
        #expect(try await eventually { host.server.servingStatus == .notServing })
        try peer.send([[], requestHeader(HealthRPC.check.path, id: 2, timeout: 5000), []])
        let (health, frames) = try #require(try await peer.receiveHeader())
        #expect(health.requestId == 2 && health.code == 0)
        #expect(try HealthCheckResponse(serializedBytes: frames[2]).status == .notServing)
        gate.open()
        #expect(try await eventually { stopped.withLock { $0 } })
    }
}
