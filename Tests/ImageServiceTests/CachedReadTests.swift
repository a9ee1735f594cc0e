import Digest
import Foundation
import Proto
import RPC
import Runtime
import Testing
@testable import ImageService
import RPCTestSupport

/// Cached images found by their key alone: the fast path of GetImage.
@Suite struct CachedReadTests {
    static func stored(_ key: String, check: String = "xxh64:1") -> StoredImage {
        var info = ImageInfo()
        info.key = key
        return StoredImage(info: info, contentCheck: check)
    }

    @Test func lruFindsAnEntryByItsImageKeyUntilItLeaves() {
        var lru = LRUCache()
        let a = Self.stored("a"), b = Self.stored("b")
        let cost = LRUCache.cost(key: a.cacheKey, value: [UInt8](repeating: 0, count: 100))
        lru.insert(a.cacheKey, [UInt8](repeating: 1, count: 100), image: a, budget: 2 * cost)
        lru.insert(b.cacheKey, [UInt8](repeating: 2, count: 100), image: b, budget: 2 * cost)
        lru.insert("a@xxh64:1/r/10x10/fit", [3], budget: 2 * cost)  // a rendition: no image attached
        #expect(lru.image("a") == nil)  // evicted as the least recently used
        #expect(lru.image("b")?.bytes == [UInt8](repeating: 2, count: 100))
        #expect(lru.image("b")?.encodedInfo == b.info.serializedBytes())
        lru.remove(b.cacheKey)
        #expect(lru.image("b") == nil)
        // Bytes of a re-used key under a new content check replace the old entry.
        let old = Self.stored("c", check: "xxh64:old"), new = Self.stored("c", check: "xxh64:new")
        lru.insert(old.cacheKey, [1], image: old, budget: 1 << 20)
        lru.insert(new.cacheKey, [2], image: new, budget: 1 << 20)
        #expect(lru.image("c")?.image == new && lru.image("c")?.bytes == [2])
        #expect(!lru.contains(old.cacheKey))
        lru.trim(to: 0)
        #expect(lru.image("c") == nil && lru.count == 0)
    }

    @Test func bytesReadBeforeARemovalAreNotFoundByImageKey() {
        let cache = ImageCache(budgetBytes: 1 << 20)
        let image = Self.stored("d")
        let ticket = cache.removalTicket()
        cache.remove(prefix: "other")  // any delete between the ticket and the insert
        cache.insert(image.cacheKey, [9, 9], image: image, ticket: ticket)
        #expect(cache.image("d") == nil)
        #expect(cache.get(image.cacheKey) == [9, 9])  // still there for a read that checked the index
        cache.insert(image.cacheKey, [9, 9], image: image, ticket: cache.removalTicket())
        #expect(cache.image("d")?.bytes == [9, 9])
        #expect(cache.statistics.hits == 2)
    }

    @Test func putsCacheSmallBlobsAndLeaveLargeOnesToTheirSecondRead() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 64 << 20)
        defer { store.close() }
        var small = [UInt8](repeating: 1, count: ImageStore.cacheOnPutBytes)
        var large = [UInt8](repeating: 2, count: ImageStore.cacheOnPutBytes + 1)
        let movie: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
        small.replaceSubrange(0..<movie.count, with: movie)
        large.replaceSubrange(0..<movie.count, with: movie)
        let smallInfo = try await store.put(small, NewImage()).info
        let largeInfo = try await store.put(large, NewImage()).info
        #expect(store.cachedRead(smallInfo.key, offset: 0, length: 0).map { Array($0.bytes) } == small)
        #expect(store.cachedRead(largeInfo.key, offset: 0, length: 0) == nil)
        #expect(try await store.read(largeInfo) == large)  // read once: not cached
        #expect(store.cachedRead(largeInfo.key, offset: 0, length: 0) == nil)
        // A range of its first block reads that block alone: neither cached nor counted.
        #expect(try await store.read(largeInfo, offset: 5, length: 10) == Array(large[5..<15]))
        #expect(store.cachedRead(largeInfo.key, offset: 0, length: 0) == nil)
        #expect(try await store.read(largeInfo, offset: 5, length: 0) == Array(large[5...]))  // every block, again: cached
        #expect(store.cachedRead(largeInfo.key, offset: 0, length: 0).map { Array($0.bytes) } == large)
        // A purge forgets the reads too.
        store.cache.purge(.critical, reason: "manual")
        store.forgetRecentReads()
        #expect(try await store.read(largeInfo) == large)
        #expect(store.cachedRead(largeInfo.key, offset: 0, length: 0) == nil)
    }

    @Test func aLargePutIsStoredFromItsFrameWhole() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        for size in [70_000, 3_000_000] {
            var put = PutImageRequest()
            put.data = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
                + (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
            put.ownerKey = "o-\(size)"
            let info = try await client.call(ImageServiceRPC.putImage, put)
            #expect(info.sizeBytes == Int64(put.data.count) && info.checksum == SHA256.checksum(put.data))
            #expect(info.mediaType == .movie && info.ownerKey == "o-\(size)")
            _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
            var get = GetImageRequest()
            get.key = info.key
            #expect(try await client.call(ImageServiceRPC.getImage, get).data == put.data)
        }
        // A large JPEG is judged from the frame too: a truncated one is refused.
        var broken = PutImageRequest()
        broken.data = Array(try Samples.photo("Landscape_1.jpg").prefix(80_000))
        #expect(broken.data.count == 80_000)
        #expect(await rpcError { try await client.call(ImageServiceRPC.putImage, broken) }?.code == .invalidArgument)
    }

    @Test func aCachedGetTooLargeToAnswerInlineCountsOneHit() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder, cacheBudgetBytes: 64 << 20)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        // Larger than GetImage answers on the server's I/O thread: served by a task.
        let size = ImageServiceHandlers.inlineReplyBytes + 4096
        var put = PutImageRequest()
        put.data = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
            + (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        let info = try await client.call(ImageServiceRPC.putImage, put)
        var get = GetImageRequest()
        get.key = info.key
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == put.data)  // from disk, read once
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == put.data)  // from disk, now cached
        let before = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == put.data)
        let after = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(after.hits == before.hits + 1)
        #expect(after.misses == before.misses)
    }

    @Test func getImageFromTheCacheMatchesTheDiskAndForgetsDeletedImages() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = try Samples.photo("Landscape_3.jpg")
        put.ownerKey = "owner-1"
        let info = try await client.call(ImageServiceRPC.putImage, put)

        var get = GetImageRequest()
        get.key = info.key.uppercased()  // any spelling of the UUID
        let cached = try await client.call(ImageServiceRPC.getImage, get)
        #expect(cached.data == put.data && cached.info == info)
        get.offset = 10
        get.length = 100
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == Array(put.data[10..<110]))
        get.offset = Int64(put.data.count) - 1
        get.length = 0
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == [put.data.last!])
        get.offset = Int64(put.data.count)
        #expect(await rpcError { try await client.call(ImageServiceRPC.getImage, get) }?.code == .outOfRange)
        let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(stats.hits >= 3 && stats.misses == 0)

        // From disk after a purge: the same reply.
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        get.offset = 0
        let fromDisk = try await client.call(ImageServiceRPC.getImage, get)
        #expect(fromDisk.data == put.data && fromDisk.info == info)

        var delete = DeleteImageRequest()
        delete.key = info.key
        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        #expect(await rpcError { try await client.call(ImageServiceRPC.getImage, get) }?.code == .notFound)
    }
}

@Suite struct CanonicalKeyTests {
    @Test func keysAreLowerCaseUUIDsWhateverTheSpelling() {
        let key = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
        #expect(ImageStore.canonicalKey(key) == key)
        #expect(ImageStore.canonicalKey(key.uppercased()) == key)
        #expect(ImageStore.canonicalKey("7C9E6679-7425-40de-944b-E07FC1F90AE7") == key)
        for bad in ["", "7c9e6679742540de944be07fc1f90ae7", "7c9e6679-7425-40de-944b-e07fc1f90ae", "7c9e6679-7425-40de-944b-e07fc1f90aeg",
                    "7c9e667--7425-40de-944b-e07fc1f90ae7", "{7c9e6679-7425-40de-944b-e07fc1f90ae}", "7c9e6679-7425-40de-944b-e07fc1f90ae7 "] {
            #expect(ImageStore.canonicalKey(bad) == nil, "\(bad)")
        }
        #expect(ImageStore.isCanonical(key) && !ImageStore.isCanonical(key.uppercased()))
    }
}
