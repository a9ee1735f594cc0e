import Foundation
import Proto
import RPC
import Testing
@testable import ImageService
import RPCTestSupport

/// GetImage of a blob that is not cached: read from the file straight into the reply's frame,
/// every block verified on the way, and cached from there when it is small enough.
@Suite struct GetImageFromDiskTests {
    static let block = BlockChecks.blockSize

    static func blob(_ count: Int, seed: Int) -> [UInt8] {
        [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
            + (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 131 &+ $0 >> 10) ^ seed) }
    }

    /// Where the service started by `ImageServiceHostTests.start(folder)` keeps blob `key`.
    static func blobPath(_ folder: TemporaryFolder, _ key: String) -> String {
        "\(folder.path)/data/images/blobs/\(key.prefix(2))/\(key)"
    }

    static func get(_ client: RPCClient, _ key: String, offset: Int64 = 0, length: Int64 = 0) async throws -> GetImageResponse {
        var request = GetImageRequest()
        request.key = key
        request.offset = offset
        request.length = length
        return try await client.call(ImageServiceRPC.getImage, request)
    }

    @Test func aBlobTooLargeToCacheIsSentWholeAndInRangesAndNeverDamaged() async throws {
        let folder = try TemporaryFolder()
        // An 8 MiB cache takes blobs up to 2 MiB: this one is always read from the file.
        let host = try ImageServiceHostTests.start(folder, cacheBudgetBytes: 8 << 20)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = Self.blob(3 * Self.block + 500, seed: 1)
        let info = try await client.call(ImageServiceRPC.putImage, put)

        let whole = try await Self.get(client, info.key)
        #expect(whole.data == put.data && whole.info == info)
        let spanning = try await Self.get(client, info.key, offset: Int64(Self.block) - 10, length: Int64(Self.block) + 20)
        #expect(spanning.data == Array(put.data[(Self.block - 10)..<(2 * Self.block + 10)]) && spanning.info == info)
        let tail = try await Self.get(client, info.key, offset: Int64(3 * Self.block))
        #expect(tail.data == Array(put.data[(3 * Self.block)...]))
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 0)

        // One byte of block 2 changes on disk behind an unchanged size and mtime.
        let path = Self.blobPath(folder, info.key)
        try BlockCheckTests.corruptKeepingTimes(path, at: 2 * Self.block + 7)
        #expect(await rpcError { try await Self.get(client, info.key) }?.code == .dataLoss)
        let damaged = await rpcError { try await Self.get(client, info.key, offset: Int64(2 * Self.block), length: 10) }
        #expect(damaged?.code == .dataLoss && damaged?.message.contains("block 2") == true, "\(String(describing: damaged))")
        #expect(try await Self.get(client, info.key, offset: 100, length: 1000).data == Array(put.data[100..<1100]))
    }

    @Test func aBlobOverAMebibyteIsCachedByItsSecondGetUnlessItIsDamaged() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder, cacheBudgetBytes: 8 << 20)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = Self.blob(Self.block + 300_000, seed: 2)  // over what a put caches, under a quarter of the budget
        let info = try await client.call(ImageServiceRPC.putImage, put)
        var damagedPut = PutImageRequest()
        damagedPut.data = Self.blob(Self.block + 200_000, seed: 3)
        let damagedInfo = try await client.call(ImageServiceRPC.putImage, damagedPut)
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())

        // Read once: sent, not cached (no copy); read again (whole, or a range): cached.
        #expect(try await Self.get(client, info.key).data == put.data)
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 0)
        #expect(try await Self.get(client, info.key).data == put.data)
        let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(stats.entries == 1 && stats.bytes >= Int64(put.data.count))
        let again = try await Self.get(client, info.key)
        #expect(again.data == put.data && again.info == info)
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).hits == stats.hits + 1)
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())  // forgets the reads too
        // A range of some of its blocks reads only those, and neither caches it nor counts.
        for _ in 0..<2 {
            #expect(try await Self.get(client, info.key, offset: 7, length: 1000).data == Array(put.data[7..<1007]))
            #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 0)
        }
        // One that reaches into every block reads them all anyway: counted, and cached the second time.
        let spanning = Int64(put.data.count) - 20
        #expect(try await Self.get(client, info.key, offset: 9, length: spanning).data == Array(put.data[9..<(9 + Int(spanning))]))
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 0)
        #expect(try await Self.get(client, info.key, offset: 9, length: spanning).data == Array(put.data[9..<(9 + Int(spanning))]))
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 1)

        let path = Self.blobPath(folder, damagedInfo.key)
        try BlockCheckTests.corruptKeepingTimes(path, at: Self.block + 5)
        for _ in 0..<3 { #expect(await rpcError { try await Self.get(client, damagedInfo.key) }?.code == .dataLoss) }
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 1)
    }

    @Test func aRangeInUndamagedBlocksOfADamagedBlobIsAnsweredOnEveryRetry() async throws {
        let folder = try TemporaryFolder()
        // A 16 MiB cache takes this 3 MiB blob on its second read.
        let host = try ImageServiceHostTests.start(folder, cacheBudgetBytes: 16 << 20)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = Self.blob(3 * Self.block - 16, seed: 4)
        let info = try await client.call(ImageServiceRPC.putImage, put)
        let path = Self.blobPath(folder, info.key)
        try BlockCheckTests.corruptKeepingTimes(path, at: 2 * Self.block + 1)

        var codes: [Int] = []
        for _ in 0..<6 {
            do {
                let reply = try await Self.get(client, info.key, offset: 10, length: 100)
                codes.append(reply.data == Array(put.data[10..<110]) && reply.info == info ? 0 : -1)
            } catch {
                codes.append((error as? RPCError).map { Int($0.code.rawValue) } ?? -2)
            }
        }
        #expect(codes == [0, 0, 0, 0, 0, 0])
        #expect(try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest()).entries == 0)
        for _ in 0..<3 {
            let whole = await rpcError { try await Self.get(client, info.key) }
            #expect(whole?.code == .dataLoss && whole?.message.contains("block 2") == true, "\(String(describing: whole))")
        }
        #expect(try await Self.get(client, info.key, offset: Int64(Self.block), length: 100).data == Array(put.data[Self.block..<(Self.block + 100)]))
    }
}
