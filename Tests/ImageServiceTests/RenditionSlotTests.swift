import Foundation
import JPEG
import Proto
import RPC
import Runtime
import Synchronization
import Testing
@testable import ImageService
import RPCTestSupport

/// Renditions wait for a render slot without holding what reads and writes need: over a real
/// socket, with the store's render slots held by renditions a test keeps in their decode.
@Suite struct RenditionSlotTests {
    @Test func aPutAndAColdReadAreAnsweredWhile32RenditionsWaitForARenderSlot() async throws {
        let served = try ServedStore()
        defer { served.stop() }
        let (store, client) = (served.store, served.client)
        let original = try await RealWorldJPEGTests.put(client, try Samples.jpeg(width: 640, height: 480))
        let large = try await RealWorldJPEGTests.put(client, Samples.mp4(2_000_000))
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())

        let waiting = Atomic<Int>(0)
        let decoding = Gate()
        defer { decoding.open() }
        store.hooks.set {
            $0.renditionWaits = { _ in waiting.add(1, ordering: .sequentiallyConsistent) }
            $0.rendering = { _ in decoding.pass() }
        }
        // Distinct sizes: each one a cache miss that must be rendered.
        let renditions = (1...32).map { index in
            Tracked { try await Self.rendition(client, original.key, width: 100 + index) }
        }
        let slots = ProcessInfo.processInfo.activeProcessorCount
        #expect(await eventually { waiting.load(ordering: .sequentiallyConsistent) == 32 && decoding.count == slots })

        // Every slot is held and the other renditions wait for one: a 1 KB put and a cold read
        // of 2 MB are answered meanwhile (before, each queued on an I/O lane behind a rendition
        // that held the lane while it waited, until its deadline).
        let quick = CallOptions(timeoutMilliseconds: 10_000, retry: .none)
        var put = PutImageRequest()
        put.data = Samples.mp4(1000)
        let small = try await client.call(ImageServiceRPC.putImage, put, options: quick)
        #expect(small.sizeBytes == 1000 + 32)
        var get = GetImageRequest()
        get.key = large.key
        #expect(try await client.call(ImageServiceRPC.getImage, get, options: quick).data.count == Int(large.sizeBytes))
        #expect(renditions.allSatisfy { !$0.hasEnded }, "the renditions were still held")
        #expect(decoding.count == slots, "no rendition started beside those holding the slots")

        decoding.open()
        for (index, rendition) in renditions.enumerated() {
            let response = try await rendition.value
            #expect(response.info?.width == Int32(101 + index), "rendition \(index + 1)")
            #expect(try JPEG.decode(response.data).width == 101 + index)
        }
    }

    /// A rendition whose caller's deadline passed while it waited for a render lane is not
    /// rendered when its turn comes: under a pile of renditions, expired work no one receives
    /// would hold the cores while live callers wait behind it.
    @Test func aRenditionWhoseCallerGaveUpWhileItWaitedIsNotRendered() async throws {
        let served = try ServedStore()
        defer { served.stop() }
        let (store, client) = (served.store, served.client)
        let original = try await RealWorldJPEGTests.put(client, try Samples.jpeg(width: 640, height: 480))
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())

        let decoding = Gate()
        defer { decoding.open() }
        let abandoned = Atomic<Int>(0), waited = Atomic<Int>(0)
        store.hooks.set {
            $0.renditionWaits = { _ in waited.add(1, ordering: .sequentiallyConsistent) }
            $0.rendering = { _ in decoding.pass() }
            $0.renditionAbandoned = { _ in abandoned.add(1, ordering: .sequentiallyConsistent) }
        }
        let slots = ProcessInfo.processInfo.activeProcessorCount
        let holding = (1...slots).map { index in
            Tracked { try await Self.rendition(client, original.key, width: 100 + index) }
        }
        #expect(await eventually { decoding.count == slots })

        // Four callers that give up after 300 ms, while every lane is held.
        let short = CallOptions(timeoutMilliseconds: 300, retry: .none)
        for index in 1...4 {
            var request = GetRenditionRequest()
            request.key = original.key
            request.width = Int32(200 + index)
            request.height = Int32(200 + index)
            let error = await rpcError { try await client.call(ImageServiceRPC.getRendition, request, options: short) }
            #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
        }

        // Those that reached the render wait (on a loaded machine, a call can be past its 300 ms
        // before its handler gets that far, and is refused before it: not rendered either).
        let reached = waited.load(ordering: .sequentiallyConsistent) - slots
        #expect(reached >= 1, "none of the four reached the render wait within its 300 ms")
        decoding.open()
        for rendition in holding { _ = try await rendition.value }
        #expect(
            await eventually { abandoned.load(ordering: .sequentiallyConsistent) == waited.load(ordering: .sequentiallyConsistent) - slots },
            "abandoned \(abandoned.load(ordering: .sequentiallyConsistent)) times, \(waited.load(ordering: .sequentiallyConsistent) - slots) waited")
        #expect(decoding.count == slots, "none of the four given up was rendered")
        // The same size asked again by a caller who waits is rendered.
        #expect(try await Self.rendition(client, original.key, width: 201).info?.width == 201)
        #expect(decoding.count == slots + 1)
    }

    /// GetRendition of `key` fitting a square of `width`.
    static func rendition(_ client: RPCClient, _ key: String, width: Int) async throws -> GetRenditionResponse {
        var request = GetRenditionRequest()
        request.key = key
        request.width = Int32(width)
        request.height = Int32(width)
        return try await client.call(
            ImageServiceRPC.getRendition, request, options: CallOptions(timeoutMilliseconds: 120_000, retry: .none))
    }
}

/// image-service over a real socket in a temporary folder, with its store at hand for hooks.
struct ServedStore {
    let folder: TemporaryFolder
    let host: ServiceComposition
    let store: ImageStore
    let client: RPCClient

    init() throws {
        folder = try TemporaryFolder()
        host = try ImageServiceHostTests.start(folder)
        store = try #require(host.first(ImageStore.self))
        client = try ImageServiceHostTests.client(folder)
    }

    func stop() {
        client.close()
        host.stop()
    }
}
