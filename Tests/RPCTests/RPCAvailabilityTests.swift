import Foundation
import Proto
import RPC
import Runtime
import Testing
import ZMQ

/// What a client sees when its server is absent, goes away, and comes back.
@Suite struct RPCAvailabilityTests {
    @Test func callToAbsentServerIsUnavailableNamingTheEndpoint() async throws {
        let endpoint = uniqueEndpoint("ipc")
        let client = try RPCClient(
            context: testContext, endpoint: endpoint, configuration: .init(connectWaitMilliseconds: 100))
        defer { client.close() }
        let error = await rpcError {
            try await client.call(HealthRPC.check, HealthCheckRequest(), options: .init(retry: .none))
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains(endpoint) == true)
    }

    @Test func serverRestartIsSeenAsUnavailableThenRecovers() async throws {
        let endpoint = uniqueEndpoint("ipc")
        let first = try makeServer(endpoint: endpoint)
        let client = try RPCClient(
            context: testContext, endpoint: endpoint, configuration: .init(connectWaitMilliseconds: 200))
        defer { client.close() }
        #expect(try await client.call(HealthRPC.check, HealthCheckRequest()).status == .serving)

        first.stop()
        let down = await rpcError {
            try await client.call(HealthRPC.check, HealthCheckRequest(), options: .init(retry: .none))
        }
        #expect(down?.code == .unavailable)

        let second = try makeServer(endpoint: endpoint)
        defer { second.stop() }
        // libzmq reconnects in the background; the default retry policy rides over that.
        let response = try await client.call(
            HealthRPC.check, HealthCheckRequest(), options: .init(timeoutMilliseconds: 5000))
        #expect(response.status == .serving)
    }

    @Test func serverStoppingWithCallInFlightFailsItUnavailableAtOnce() async throws {
        let endpoint = uniqueEndpoint("ipc")
        let server = try makeServer(endpoint: endpoint)
        let client = try RPCClient(context: testContext, endpoint: endpoint)
        defer { client.close() }
        _ = try await client.call(HealthRPC.check, HealthCheckRequest())
        var slow = GetItemRequest()
        slow.key = "sleep:60000"
        let request = slow
        let started = ContinuousClock.now
        async let error = rpcError {
            try await client.call(ItemServiceRPC.getItem, request, options: .init(timeoutMilliseconds: 50_000, retry: .none))
        }
        try await Task.sleep(for: .milliseconds(100))
        server.stop()
        #expect(await error?.code == .unavailable)
        // Not the 50 s deadline: the lost connection ended the call.
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func mutatingCallIsRetriedAcrossRestartOnlyWithItsKey() async throws {
        // A read-only call recovers by itself when the server comes back during its retries.
        let endpoint = uniqueEndpoint("ipc")
        let client = try RPCClient(
            context: testContext, endpoint: endpoint, configuration: .init(connectWaitMilliseconds: 100))
        defer { client.close() }
        let late = Task {
            try await Task.sleep(for: .milliseconds(150))
            return try makeServer(endpoint: endpoint)
        }
        var request = CreateItemRequest()
        request.name = "Shiny Spork"
        // Never sent while the server is absent, so even a mutating call may retry.
        let item = try await client.call(
            ItemServiceRPC.createItem, request,
            options: .init(timeoutMilliseconds: 5000, retry: RetryPolicy(maxAttempts: 10, initialBackoffMilliseconds: 50)))
        #expect(item.name == "Shiny Spork")
        try await late.value.stop()
    }
}
