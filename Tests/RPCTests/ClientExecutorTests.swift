import Foundation
import Proto
@testable import RPC
import Synchronization
import Testing
import RPCTestSupport

/// Calls made on the client's I/O thread through `client.executor`.
@Suite struct ClientExecutorTests {
    @Test func callsOnTheClientsThreadRoundTripBesideCallsFromThePool() async throws {
        let server = try makeServer(endpoint: uniqueEndpoint("tcp"))
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        // Calls from pool tasks run at the same time on the same client.
        let pooled = Task {
            var names: [String] = []
            for i in 0..<200 {
                var request = CreateItemRequest()
                request.name = "pooled \(i)"
                names.append(try await client.call(ItemServiceRPC.createItem, request).name)
            }
            return names
        }
        let (names, everyStepOnTheLoop) = try await withTaskExecutorPreference(client.executor) {
            var names: [String] = []
            var onLoop = true
            for i in 0..<200 {
                onLoop = onLoop && client.ioExecutor.onLoopThread
                var request = CreateItemRequest()
                request.name = "on the loop \(i)"
                names.append(try await client.call(ItemServiceRPC.createItem, request).name)
                onLoop = onLoop && client.ioExecutor.onLoopThread
            }
            return (names, onLoop)
        }
        #expect(everyStepOnTheLoop)
        #expect(names == (0..<200).map { "on the loop \($0)" })
        #expect(try await pooled.value == (0..<200).map { "pooled \($0)" })
        // Errors and deadlines arrive on the loop as they do on the pool.
        let (missing, late) = await withTaskExecutorPreference(client.executor) {
            (await Self.getItem("missing", client: client), await Self.getItem("sleep:500", client: client, timeout: 50))
        }
        #expect(missing?.code == .notFound)
        #expect(late?.code == .deadlineExceeded)
    }

    /// GetItem of `key`: the error, or nil.
    static func getItem(_ key: String, client: RPCClient, timeout: UInt32 = 10_000) async -> RPCError? {
        var request = GetItemRequest()
        request.key = key
        do {
            _ = try await client.call(ItemServiceRPC.getItem, request, options: CallOptions(timeoutMilliseconds: timeout))
            return nil
        } catch {
            return error
        }
    }

    @Test func closingFromTheClientsThreadEndsItsCallsAndTheTaskGoesOnElsewhere() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        let outcome = await withTaskExecutorPreference(client.executor) { () async -> (RPCError?, Bool) in
            var request = CreateItemRequest()
            request.name = "before close"
            _ = try? await client.call(ItemServiceRPC.createItem, request)
            client.close()  // returns at once on the loop thread; the loop stops after this step
            let after = await rpcError { try await client.call(ItemServiceRPC.createItem, request) }
            // Once this step ends, so does the loop: the task's later steps run on the global executor.
            await Task.yield()
            return (after, client.ioExecutor.onLoopThread)
        }
        #expect(outcome.0?.code == .cancelled)
        #expect(outcome.1 == false)
    }

    @Test func aCallOnTheLoopWaitingForAStoppedServerIsCancelledByClose() async throws {
        let server = try makeServer(endpoint: uniqueEndpoint("tcp"))
        let endpoint = server.boundEndpoints[0]
        let client = try RPCClient(context: testContext, endpoint: endpoint)
        var slow = GetItemRequest()
        slow.key = "sleep:60000"
        let call = Task {
            await withTaskExecutorPreference(client.executor) {
                await rpcError { try await client.call(ItemServiceRPC.getItem, slow, options: .init(timeoutMilliseconds: 60_000)) }
            }
        }
        // Sent and running at the server: close has a call in flight to cancel.
        #expect(try await eventually { server.stats.inFlight == 1 })
        client.close()
        server.stop()
        #expect(await call.value?.code == .cancelled)
    }
}
