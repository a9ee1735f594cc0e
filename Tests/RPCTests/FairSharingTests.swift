import Foundation
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport
import TestSupport

/// One client cannot starve the others: calls and request bytes in flight are capped per peer
/// (per connection) as well as in total, answered RESOURCE_EXHAUSTED with retry_after_ms.
@Suite struct FairSharingTests {
    @Test func theSharesDefaultToAQuarterOfTheCallsAndHalfTheBytes() {
        let configuration = RPCServer.Configuration(endpoints: [], processName: "x", maxMessageBytes: 1 << 20, maxInFlight: 64)
        #expect(configuration.maxInFlightPerPeer == 16)
        #expect(configuration.maxInFlightBytesPerPeer == 2 << 20)
        #expect(RPCServer.Configuration(endpoints: [], processName: "x", maxInFlight: 1).maxInFlightPerPeer == 1)
    }

    @Test func aPeersCallsBeyondItsShareAreRefusedWhileAnotherPeerIsServed() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, calls: CallCounter()) {
            $0.maxInFlight = 16
            $0.maxInFlightPerPeer = 4
        }
        defer { server.stop() }
        let endpoint = server.boundEndpoints[0]
        let flood = try RawPeer(.dealer, endpoint: endpoint)
        for id in 1...10 {
            try flood.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: UInt64(id), timeout: 30_000), getItem("gate-\(id)").serializedBytes()])
        }
        // Four run (held at the gate); the six beyond the peer's share are refused at once.
        var refused: [UInt64] = []
        for _ in 0..<6 {
            let reply = try await flood.receiveHeader()
            let header = try #require(reply?.0)
            #expect(header.code == StatusCode.resourceExhausted.rawValue)
            #expect(header.retryAfterMs > 0)
            #expect(header.message.contains("this client has 4 calls in flight"), "\(header.message)")
            refused.append(header.requestId)
        }
        #expect(refused.sorted() == Array(5...10))
        #expect(server.stats.inFlight == 4)

        // Another client is served meanwhile, on the first try.
        let other = try RPCClient(context: testContext, endpoint: endpoint)
        defer { other.close() }
        let item = try await other.call(ItemServiceRPC.getItem, getItem("quick"), options: .init(timeoutMilliseconds: 10_000, retry: .none))
        #expect(item.key == "quick")

        gate.open()
        for _ in 0..<4 {
            let reply = try await flood.receiveHeader()
            #expect(reply?.0.code == 0)
        }
        // Its share is free again.
        try flood.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: 11), getItem("again").serializedBytes()])
        let again = try await flood.receiveHeader()
        #expect(again?.0.code == 0 && again?.0.requestId == 11)
    }

    @Test func aPeersBytesBeyondItsShareAreRefusedWhileAnotherPeerSendsAsMuch() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, calls: CallCounter()) {
            $0.maxInFlightBytes = 8 << 20
            $0.maxInFlightBytesPerPeer = 1 << 20
        }
        defer { server.stop() }
        let endpoint = server.boundEndpoints[0]
        let first = try RPCClient(context: testContext, endpoint: endpoint)
        defer { first.close() }
        async let held = first.call(
            ItemServiceRPC.getItem, getItem("gate" + String(repeating: "p", count: 700_000)),
            options: .init(timeoutMilliseconds: 30_000, retry: .none))
        try await gate.waitUntilWaiting(1)
        let big = createItem(String(repeating: "y", count: 400_000))
        let busy = await rpcError { try await first.call(ItemServiceRPC.createItem, big, options: .init(retry: .none)) }
        #expect(busy?.code == .resourceExhausted)
        #expect(busy?.message.contains("one peer's limit of 1048576") == true, "\(busy?.message ?? "")")

        let second = try RPCClient(context: testContext, endpoint: endpoint)
        defer { second.close() }
        let created = try await second.call(ItemServiceRPC.createItem, big, options: .init(retry: .none))
        #expect(created.name.count == 400_000)
        gate.open()
        _ = try await held
    }

    @Test func aFloodFromOnePeerLeavesAnotherPeersCallsWithinTheirDeadline() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, calls: CallCounter()) {
            $0.maxInFlight = 64
            $0.maxInFlightPerPeer = 16
        }
        defer {
            gate.open()
            server.stop()
        }
        let endpoint = server.boundEndpoints[0]
        // 200 calls that never finish while the test runs: without a per-peer share they would
        // hold all 64 places and every other caller would be refused.
        let flood = try RawPeer(.dealer, endpoint: endpoint)
        for id in 1...200 {
            try flood.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: UInt64(id), timeout: 60_000), getItem("gate-\(id)").serializedBytes()])
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while server.stats.inFlight < 16 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(server.stats.inFlight == 16)

        let other = try RPCClient(context: testContext, endpoint: endpoint)
        defer { other.close() }
        var elapsed: [Duration] = []
        for n in 0..<50 {
            let started = ContinuousClock.now
            let item = try await other.call(ItemServiceRPC.getItem, getItem("call-\(n)"), options: .init(timeoutMilliseconds: 2000, retry: .none))
            elapsed.append(ContinuousClock.now - started)
            #expect(item.key == "call-\(n)".prefix(8).description)
        }
        elapsed.sort()
        #expect(elapsed[48] < .milliseconds(2000), "p99 \(elapsed[48])")
        #expect(server.stats.inFlight == 16)
    }
}
