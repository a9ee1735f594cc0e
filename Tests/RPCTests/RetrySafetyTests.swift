import Foundation
import Proto
import RPC
import Testing
import RPCTestSupport
import TestSupport

/// A mutating call is retried only with its idempotency key, the same one on every attempt:
/// after a lost connection the retry is answered from the first run instead of running again,
/// and a call sent without a key (an explicitly empty one) is never sent twice.
@Suite struct RetrySafetyTests {
    /// A server behind a relay whose CreateItem counts its runs by name and, on a name's first
    /// run, cuts the connection after running ("drop…": its answer never reaches the caller) or
    /// answers UNAVAILABLE ("refuse…"); the item it answers carries a key of its own run.
    final class Fixture: Sendable {
        let server: RPCServer
        let relay: SocketRelay
        let client: RPCClient
        /// Per name, the item key of each run, in order.
        let runs = Shared<[String: [String]]>([:])

        init() throws {
            let endpoint = uniqueEndpoint("ipc")
            let relay = try SocketRelay(to: endpoint, at: uniqueEndpoint("ipc"))
            self.relay = relay
            server = try RPCServer(
                context: testContext, configuration: .init(endpoints: [endpoint], processName: "retry-test"), logger: testLogger)
            let runs = runs
            server.register(ItemServiceRPC.createItem) { request, _ in
                var item = Item()
                item.key = UUID().uuidString.lowercased()
                item.name = request.name
                let first = runs.withLock { runs in
                    runs[request.name, default: []].append(item.key)
                    return runs[request.name]!.count == 1
                }
                if first && request.name.hasPrefix("drop") { relay.cut() }
                if first && request.name.hasPrefix("refuse") { throw RPCError.unavailable("\(request.name) refused once") }
                return item
            }
            try server.start()
            client = try RPCClient(context: testContext, endpoint: relay.endpoint)
        }

        func stop() {
            client.close()
            server.stop()
            relay.close()
        }

        /// CreateItem of `name` with up to 5 attempts; `key` nil leaves the client to make one.
        func create(_ name: String, key: String? = nil) async throws(RPCError) -> Item {
            try await client.call(
                ItemServiceRPC.createItem, createItem(name),
                options: .init(
                    timeoutMilliseconds: 30_000, idempotencyKey: key,
                    retry: RetryPolicy(maxAttempts: 5, initialBackoffMilliseconds: 50, maxBackoffMilliseconds: 200)))
        }

        func runs(of name: String) -> [String] { runs.value[name] ?? [] }
    }

    @Test func aCallWhoseConnectionDropsAfterTheServerRanItIsRetriedWithItsKeyAndAnsweredFromThatRun() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let item = try await fixture.create("drop: Shiny Spork")
        // One run: the retry carried the first attempt's key, and got that run's answer back.
        #expect(fixture.runs(of: "drop: Shiny Spork").count == 1)
        #expect([item.key] == fixture.runs(of: "drop: Shiny Spork"))
        #expect(fixture.server.stats.replayed == 1)
        // The answer came over a second connection: the first was cut before it could.
        #expect(fixture.relay.connections == 2)
    }

    @Test func aCallWithAnEmptyKeyIsNotRetriedAfterADropOrUnavailableWhileAKeyedOneIs() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        // Without a key: one run each, and the caller hears UNAVAILABLE, the retries unused.
        let dropped = await rpcError { try await fixture.create("drop: without a key", key: "") }
        #expect(dropped?.code == .unavailable, "\(String(describing: dropped))")
        #expect(fixture.runs(of: "drop: without a key").count == 1)
        let refused = await rpcError { try await fixture.create("refuse: without a key", key: "") }
        #expect(refused?.code == .unavailable && refused?.message == "refuse: without a key refused once", "\(String(describing: refused))")
        #expect(fixture.runs(of: "refuse: without a key").count == 1)

        // The same two calls with the key the client makes: the drop is answered from its one
        // run; the refusal (not an answer to keep) runs again and is answered.
        let afterDrop = try await fixture.create("drop: with a key")
        #expect([afterDrop.key] == fixture.runs(of: "drop: with a key"))
        let afterRefusal = try await fixture.create("refuse: with a key")
        #expect(fixture.runs(of: "refuse: with a key").count == 2)
        #expect(afterRefusal.key == fixture.runs(of: "refuse: with a key").last)
    }
}
