import Dispatch
import Foundation
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport

/// Handlers whose work runs on a thread the service owns and reply from there.
@Suite struct DeferredHandlerTests {
    static func server() throws -> RPCServer {
        let server = try RPCServer(
            context: testContext, configuration: .init(endpoints: [uniqueEndpoint()], processName: "deferred"),
            logger: testLogger)
        let queue = DispatchQueue(label: "store")
        server.registerDeferred(ItemServiceRPC.getItem) { request, _, reply in
            queue.asyncAfter(deadline: .now() + .milliseconds(request.key == "slow" ? 2000 : 5)) {
                if request.key == "missing" {
                    reply(.failure(RPCError.notFound("item \"missing\" not found")))
                } else {
                    var item = Item()
                    item.key = request.key
                    reply(.success(item))
                }
            }
        }
        try server.start()
        return server
    }

    @Test func replyFromAnotherThreadReachesTheCaller() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var request = GetItemRequest()
        request.key = "abc"
        #expect(try await client.call(ItemServiceRPC.getItem, request).key == "abc")
        request.key = "missing"
        let error = await rpcError { try await client.call(ItemServiceRPC.getItem, request) }
        #expect(error == RPCError.notFound("item \"missing\" not found"))
        // A body that does not parse never reaches the handler.
        let bad = await rpcError {
            try await client.callRaw(path: ItemServiceRPC.getItem.path, body: [0xFF, 0xFF], readOnly: true)
        }
        #expect(bad?.code == .invalidArgument)
    }

    @Test func lateReplyAfterTheDeadlineIsDeadlineExceededAndTheServerGoesOn() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var slow = GetItemRequest()
        slow.key = "slow"
        let error = await rpcError {
            try await client.call(ItemServiceRPC.getItem, slow, options: .init(timeoutMilliseconds: 200, retry: .none))
        }
        #expect(error?.code == .deadlineExceeded)
        var quick = GetItemRequest()
        quick.key = "quick"
        #expect(try await client.call(ItemServiceRPC.getItem, quick).key == "quick")
    }
}
