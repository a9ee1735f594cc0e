import Foundation
import Proto
import RPC
import Synchronization
import Runtime
import Testing
import ZMQ
import RPCTestSupport

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
            HealthRPC.check, HealthCheckRequest(),
            options: .init(
                timeoutMilliseconds: 60_000,
                retry: RetryPolicy(maxAttempts: 200, initialBackoffMilliseconds: 50, maxBackoffMilliseconds: 300)))
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
        // Started from a plain thread: under a loaded test run the task pool may be busy.
        let late = LateServer(endpoint: endpoint, afterMilliseconds: 150)
        var request = CreateItemRequest()
        request.name = "Shiny Spork"
        // Never sent while the server is absent, so even a mutating call may retry.
        let item = try await client.call(
            ItemServiceRPC.createItem, request,
            options: .init(
                timeoutMilliseconds: 60_000,
                retry: RetryPolicy(maxAttempts: 200, initialBackoffMilliseconds: 50, maxBackoffMilliseconds: 300)))
        #expect(item.name == "Shiny Spork")
        late.stop()
    }
}

/// A server started on its own thread after a delay.
final class LateServer: Sendable {
    private let server = Mutex<RPCServer?>(nil)
    private let done = Mutex(false)

    init(endpoint: String, afterMilliseconds: UInt32) {
        Thread { [self] in
            usleep(afterMilliseconds * 1000)
            server.withLock { $0 = try? makeServer(endpoint: endpoint) }
            done.withLock { $0 = true }
        }.start()
    }

    func stop() {
        while !done.withLock({ $0 }) { usleep(1000) }
        server.withLock { $0?.stop() }
    }
}
