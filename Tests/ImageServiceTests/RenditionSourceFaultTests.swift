import Foundation
import Proto
import Synchronization
import RPC
import Testing
@testable import ImageService
import RPCTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A rendition whose source file fails under its read (cut short by someone else, or a media
/// error) is answered DATA_LOSS, and the service goes on serving: the read never faults the
/// process (a read through a memory map raised SIGBUS and killed image-service).
@Suite struct RenditionSourceFaultTests {
    @Test func aSourceCutShortWhileItIsReadIsDataLossAndTheServiceGoesOnServing() async throws {
        let served = try ServedStore()
        defer { served.stop() }
        let (folder, store, client) = (served.folder, served.store, served.client)
        let damaged = try await RealWorldJPEGTests.put(client, try Samples.jpeg(width: 1600, height: 1200))
        let soundData = try Samples.jpeg(width: 320, height: 240)
        let sound = try await RealWorldJPEGTests.put(client, soundData)
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())

        // Cut to half its size once it is open and its size was checked.
        let path = GetImageFromDiskTests.blobPath(folder, damaged.key)
        let cut = Atomic<Int>(0)
        store.hooks.set {
            $0.renditionSourceOpened = { key in
                guard key == damaged.key else { return }
                if truncate(path, off_t(damaged.sizeBytes / 2)) == 0 { cut.add(1, ordering: .sequentiallyConsistent) }
            }
        }
        let error = await rpcError { try await RenditionSlotTests.rendition(client, damaged.key, width: 200) }
        #expect(cut.load(ordering: .sequentiallyConsistent) == 1, "the source was cut under the read")
        #expect(error?.code == .dataLoss, "\(String(describing: error))")
        #expect(error?.message.contains(damaged.key) == true, "\(String(describing: error))")

        // Still serving: a rendition of another image, a get, a put.
        let rendition = try await RenditionSlotTests.rendition(client, sound.key, width: 100)
        #expect(rendition.info?.width == 100)
        var get = GetImageRequest()
        get.key = sound.key
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == soundData)
        #expect(try await RealWorldJPEGTests.put(client, Samples.mp4(1000)).sizeBytes == 1032)
    }
}
