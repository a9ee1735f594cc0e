import Dispatch
import Foundation
import Proto
import RPC
import Runtime
import Locking
import Testing
import RPCTestSupport

/// Hostile request bodies cost the server a scan, not their unpack, and never hold up others.
@Suite struct DecodeBudgetRPCTests {
    static let reorderPath = ItemServiceRPC.reorderPhotos.path

    /// A server whose ReorderPhotos is deferred to a queue (as item-service's is), recording
    /// the thread each call was handed over on.
    /// The threads calls were handed over on, by method.
    final class Threads: Sendable {
        let seen = Locked<[(method: String, thread: UInt)]>([])
        func record(_ method: String) { seen.withLock { $0.append((method, UInt(bitPattern: Int(pthread_self())))) } }
        var all: [(method: String, thread: UInt)] { seen.withLock { $0 } }
    }

    static func server(threads: Threads? = nil) throws -> RPCServer {
        let server = try RPCServer(
            context: testContext,
            configuration: .init(endpoints: [uniqueEndpoint("ipc")], processName: "decode"), logger: testLogger)
        let queue = DispatchQueue(label: "store")
        server.registerDeferred(ItemServiceRPC.reorderPhotos) { request, _, reply in
            threads?.record("reorder")
            queue.async {
                var item = Item()
                item.key = request.itemKey
                item.photoKeys = request.imageKeys
                reply(.success(item))
            }
        }
        // Inline: runs on the I/O thread itself.
        server.registerInline(ItemServiceRPC.getItem) { request, _ in
            threads?.record("inline")
            var item = Item()
            item.key = request.key
            return item
        }
        try server.start()
        return server
    }

    static func repeated(_ field: [UInt8], bytes: Int) -> [UInt8] {
        [UInt8]((0..<bytes / field.count).flatMap { _ in field })
    }

    @Test func hostileBodiesGetInvalidArgumentNamingTheLimitWhileHealthKeepsAnswering() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let endpoint = server.boundEndpoints[0]
        // 4 MiB of field 15 = 0 (unknown), and 4 MiB of image_keys = "": 2,097,152 fields each.
        let unknown = Self.repeated([0x78, 0x00], bytes: 4 << 20)
        let empties = Self.repeated([0x12, 0x00], bytes: 4 << 20)

        let done = Locked(false)
        let health = Task { () -> (answered: Int, failed: [String]) in
            let client = try RPCClient(context: testContext, endpoint: endpoint)
            defer { client.close() }
            var answered = 0
            var failed: [String] = []
            while !done.withLock({ $0 }) || answered == 0 {
                do {
                    _ = try await client.call(
                        HealthRPC.check, HealthCheckRequest(), options: .init(timeoutMilliseconds: 10_000, retry: .none))
                    answered += 1
                } catch {
                    failed.append("\(error)")
                }
            }
            return (answered, failed)
        }
        let peer = try RawPeer(.dealer, endpoint: endpoint)
        for id in 1...16 {
            try peer.send([[], requestHeader(Self.reorderPath, id: UInt64(id)), id % 2 == 1 ? unknown : empties])
        }
        var replies: [UInt64: ResponseHeader] = [:]
        for _ in 1...16 {
            let (header, _) = try #require(try await peer.receiveHeader(timeoutMilliseconds: 60_000))
            replies[header.requestId] = header
        }
        done.withLock { $0 = true }
        let (answered, failed) = try await health.value
        #expect(answered > 0)
        #expect(failed.isEmpty, "\(failed)")
        for id in UInt64(1)...16 {
            let reply = try #require(replies[id])
            #expect(reply.code == StatusCode.invalidArgument.rawValue)
            if id % 2 == 1 {
                #expect(reply.message == "request body: homepwner.v1.ReorderPhotosRequest has more than 1024 unknown fields (field 15 of homepwner.v1.ReorderPhotosRequest is one); at most 1024 are accepted")
            } else {
                #expect(reply.message == "request body: homepwner.v1.ReorderPhotosRequest.image_keys has more than 65536 values; at most 65536 are accepted in one message")
            }
        }
        #expect(server.stats.inFlight == 0 && server.stats.inFlightBytes == 0)
    }

    @Test func deferredMethodDecodesALargeBodyOffTheIOThread() async throws {
        let threads = Threads()
        let server = try Self.server(threads: threads)
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        _ = try await client.call(ItemServiceRPC.getItem, getItem("where is the I/O thread"))
        var small = ReorderPhotosRequest()
        small.imageKeys = ["a", "b"]
        #expect(try await client.call(ItemServiceRPC.reorderPhotos, small).photoKeys == ["a", "b"])
        var large = ReorderPhotosRequest()
        large.imageKeys = (0..<2000).map { String(format: "7f9c24e8-3b1a-4c2d-9e8f-%012x", $0) }
        #expect(large.serializedBytes().count > 64 * 1024)  // RPCServer.ioThreadDecodeLimit
        #expect(try await client.call(ItemServiceRPC.reorderPhotos, large).photoKeys == large.imageKeys)
        // A small body is decoded and handed over on the I/O thread; a large one in a task.
        let seen = threads.all
        #expect(seen.map(\.method) == ["inline", "reorder", "reorder"])
        #expect(seen.count == 3 && seen[1].thread == seen[0].thread)
        #expect(seen.count == 3 && seen[2].thread != seen[0].thread)
    }
}
