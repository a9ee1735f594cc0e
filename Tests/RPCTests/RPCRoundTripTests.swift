import Foundation
import Proto
import RPC
import Runtime
import Locking
import Testing
import ZMQ
import RPCTestSupport

@Suite struct RPCRoundTripTests {
    @Test(arguments: ["inproc", "tcp", "ipc"])
    func typedCallRoundTripsOverTransport(_ transport: String) async throws {
        let server = try makeServer(endpoint: uniqueEndpoint(transport))
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var request = CreateItemRequest()
        request.name = "Rusty Spork ✓"
        request.valueInDollars = .max
        let item = try await client.call(ItemServiceRPC.createItem, request)
        #expect(item.name == "Rusty Spork ✓")
        #expect(item.valueInDollars == .max)
        #expect(UUID(uuidString: item.key) != nil)
    }

    @Test func healthCheckAnswersForProcessAndNamedServices() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        let whole = try await client.call(HealthRPC.check, HealthCheckRequest())
        #expect(whole.status == .serving)
        #expect(whole.process == "test-server")
        #expect(whole.services == ["homepwner.v1.Health", "homepwner.v1.ItemService", "homepwner.v1.Metrics"])
        var named = HealthCheckRequest()
        named.service = "homepwner.v1.ItemService"
        #expect(try await client.call(HealthRPC.check, named).status == .serving)
        named.service = "homepwner.v1.Nope"
        #expect(try await client.call(HealthRPC.check, named).status == .serviceUnknown)
        server.servingStatus = .notServing
        #expect(try await client.call(HealthRPC.check, HealthCheckRequest()).status == .notServing)
    }

    @Test func handlerErrorsBecomeStatusCodesAndMessages() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var missing = GetItemRequest()
        missing.key = "missing"
        let notFound = await rpcError { try await client.call(ItemServiceRPC.getItem, missing) }
        #expect(notFound == RPCError.notFound("item \"missing\" not found"))
        var boom = GetItemRequest()
        boom.key = "boom"
        let failure = await rpcError { try await client.call(ItemServiceRPC.getItem, boom) }
        #expect(failure?.code == .internal)
        #expect(failure?.message.contains("GetItem") == true)
        // The server goes on after a handler failure.
        #expect(try await healthy(server.boundEndpoints[0]))
    }

    @Test func aFullDiskIsAnsweredResourceExhaustedWithReasonDiskFullAndNoRetryAfter() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        for (id, key) in [(UInt64(1), "full"), (2, "missing")] {
            var request = GetItemRequest()
            request.key = key
            try peer.send([[], requestHeader(ItemServiceRPC.getItem.path, id: id), request.serializedBytes()])
        }
        var headers: [UInt64: ResponseHeader] = [:]
        for _ in 0..<2 {
            let (header, _) = try #require(try await peer.receiveHeader())
            headers[header.requestId] = header
        }
        let full = try #require(headers[1]), missing = try #require(headers[2])
        #expect(full.code == StatusCode.resourceExhausted.rawValue && full.reason == "DISK_FULL" && full.retryAfterMs == 0)
        #expect(full.message == "the test store's disk is full")
        #expect(missing.code == StatusCode.notFound.rawValue && missing.reason.isEmpty)

        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var request = GetItemRequest()
        request.key = "full"
        let refused = await rpcError { try await client.call(ItemServiceRPC.getItem, request) }
        #expect(refused?.isDiskFull == true && refused?.reason == RPCError.diskFullReason)
    }

    @Test func healthCheckCarriesThePartsConditionsWhileServing() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        #expect(try await client.call(HealthRPC.check, HealthCheckRequest()).conditions.isEmpty)
        func condition(_ name: String, _ message: String) -> HealthCondition {
            var condition = HealthCondition()
            condition.name = name
            condition.message = message
            condition.sinceUnixMs = 1
            return condition
        }
        let full = condition("disk_full", "the disk is full"), second = condition("a_part", "a second part's")
        let conditions = Locked([full])
        server.addHealthConditions { conditions.withLock { $0 } }
        server.addHealthConditions { [second] }
        server.setCondition("events", "set by the server")
        let health = try await client.call(HealthRPC.check, HealthCheckRequest())
        #expect(health.status == .serving && health.conditions.map(\.name) == ["a_part", "disk_full", "events"], "\(health.conditions)")
        #expect(health.conditions[1] == full)
        conditions.withLock { $0 = [] }
        server.clearCondition("events")
        #expect(try await client.call(HealthRPC.check, HealthCheckRequest()).conditions.map(\.message) == ["a second part's"])
    }

    @Test func unknownMethodIsUnimplemented() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        let error = await rpcError { try await client.callRaw(path: "/homepwner.v1.Nope/Missing", body: [], readOnly: true) }
        #expect(error?.code == .unimplemented)
        #expect(error?.message.contains("/homepwner.v1.Nope/Missing") == true)
    }

    @Test func deadlineExceededWhenHandlerOutlivesTimeout() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var slow = GetItemRequest()
        slow.key = "sleep:60000"
        let started = ContinuousClock.now
        let error = await rpcError {
            try await client.call(ItemServiceRPC.getItem, slow, options: .init(timeoutMilliseconds: 200))
        }
        #expect(error?.code == .deadlineExceeded)
        // Well before the handler's 60 s: the deadline, not the handler, ended the call.
        #expect(ContinuousClock.now - started < .seconds(30))
        // The server counted the deadline and cancelled the handler (it would sleep a minute).
        #expect(try await eventually { server.stats.deadlineExceeded == 1 && server.stats.inFlight == 0 })
        #expect(try await healthy(server.boundEndpoints[0]))
    }

    @Test func plainREQSocketWorksOneRequestAtATime() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.req, endpoint: server.boundEndpoints[0])
        var request = CreateItemRequest()
        request.name = "Shiny Mac"
        for id in 1...3 as ClosedRange<UInt64> {
            try peer.send([requestHeader("/homepwner.v1.ItemService/CreateItem", id: id), request.serializedBytes()])
            let (header, frames) = try #require(try await peer.receiveHeader())
            #expect(header.requestId == id)
            #expect(header.code == 0)
            #expect(try Item(serializedBytes: frames[1]).name == "Shiny Mac")
        }
    }

    @Test func idempotencyKeyReplaysFirstResultWithoutRunningAgain() async throws {
        let calls = CallCounter()
        let server = try makeServer(calls: calls)
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var request = CreateItemRequest()
        request.name = "Fluffy Bear"
        let options = CallOptions(idempotencyKey: "create-fluffy-1")
        let first = try await client.call(ItemServiceRPC.createItem, request, options: options)
        let second = try await client.call(ItemServiceRPC.createItem, request, options: options)
        #expect(first == second)
        #expect(calls.value == 1)
        // A different key runs again; so does a call without an explicit key.
        _ = try await client.call(ItemServiceRPC.createItem, request, options: .init(idempotencyKey: "other"))
        _ = try await client.call(ItemServiceRPC.createItem, request)
        #expect(calls.value == 3)
        #expect(server.stats.replayed == 1)
    }

    @Test func concurrentDuplicatesWithOneKeyRunOnce() async throws {
        let calls = CallCounter()
        let server = try makeServer(calls: calls)
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var template = CreateItemRequest()
        template.name = "Rusty Bear"
        let request = template
        let items = try await withThrowingTaskGroup(of: Item.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await client.call(ItemServiceRPC.createItem, request, options: .init(idempotencyKey: "same"))
                }
            }
            return try await group.reduce(into: [Item]()) { $0.append($1) }
        }
        #expect(Set(items.map { $0.key }).count == 1)
        #expect(calls.value == 1)
    }

    @Test func thousandConcurrentCallsFromEightClientsAllAnsweredCorrectly() async throws {
        let server = try makeServer(endpoint: uniqueEndpoint("tcp"))
        defer { server.stop() }
        let clients = try (0..<8).map { _ in try RPCClient(context: testContext, endpoint: server.boundEndpoints[0]) }
        defer { clients.forEach { $0.close() } }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<1000 {
                group.addTask {
                    var request = CreateItemRequest()
                    request.name = "item-\(i)"
                    request.valueInDollars = Int64(i)
                    let item = try await clients[i % 8].call(ItemServiceRPC.createItem, request)
                    return item.name == "item-\(i)" && item.valueInDollars == Int64(i) ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(server.stats.received >= 1000)
    }
}
