import Digest
import Foundation
import Harness
import ImageService
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport

/// The image service through the whole stack: client → ipc → RPC runtime → handlers → store.
@Suite struct ImageServiceRPCTests {
    static func photo(_ name: String) throws -> [UInt8] {
        try Fixtures.orientationPhoto(name)
    }

    /// memcmp, because Array == compares element by element in debug builds.
    static func same(_ data: [UInt8], at offset: Int, as expected: [UInt8]) -> Bool {
        data.withUnsafeBytes { a in
            expected.withUnsafeBytes { b in memcmp(a.baseAddress! + offset, b.baseAddress!, b.count) == 0 }
        }
    }

    static func put(_ client: RPCClient, _ data: [UInt8], owner: String = "") async throws -> ImageInfo {
        var request = PutImageRequest()
        request.data = data
        request.ownerKey = owner
        return try await client.call(ImageServiceRPC.putImage, request, options: .init(timeoutMilliseconds: 30_000))
    }

    static func get(_ client: RPCClient, _ key: String, offset: Int64 = 0, length: Int64 = 0) async throws -> GetImageResponse {
        var request = GetImageRequest()
        request.key = key
        request.offset = offset
        request.length = length
        return try await client.call(ImageServiceRPC.getImage, request, options: .init(timeoutMilliseconds: 30_000))
    }

    @Test func putGetStatListDeleteWithPreciseStatusCodes() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }

        let photo = try Self.photo("Portrait_5.jpg")
        let info = try await Self.put(client, photo, owner: "item-7")
        #expect(info.orientation == 5 && info.checksum == SHA256.checksum(photo) && info.contentType == "image/jpeg")
        let got = try await Self.get(client, info.key)
        #expect(got.data == photo && got.info == info)
        #expect(try await Self.get(client, info.key, offset: Int64(photo.count) - 3).data == Array(photo.suffix(3)))
        var stat = StatImageRequest()
        stat.key = info.key
        #expect(try await client.call(ImageServiceRPC.statImage, stat) == info)
        var list = ListImagesRequest()
        list.ownerKey = "item-7"
        #expect(try await client.call(ImageServiceRPC.listImages, list).images == [info])

        let empty = await rpcError { try await Self.put(client, []) }
        #expect(empty?.code == .invalidArgument && empty?.message == "data is empty")
        let text = await rpcError { try await Self.put(client, Array("plain text".utf8)) }
        #expect(text?.code == .invalidArgument)
        let ghost = UUID().uuidString.lowercased()
        let missing = await rpcError { try await Self.get(client, ghost) }
        #expect(missing?.code == .notFound && missing?.message == "key \(ghost): no such image")
        let past = await rpcError { try await Self.get(client, info.key, offset: Int64(photo.count)) }
        #expect(past?.code == .outOfRange)
        // Extreme values: precise codes, and the server keeps serving.
        for (offset, length, code) in [
            (Int64.max, Int64(0), StatusCode.outOfRange), (Int64.min, 0, .invalidArgument), (1, Int64.max, .outOfRange),
            (10, Int64.max - 5, .outOfRange), (0, -1, .invalidArgument), (Int64(photo.count) - 1, 2, .outOfRange),
        ] {
            let error = await rpcError { try await Self.get(client, info.key, offset: offset, length: length) }
            #expect(error?.code == code, "offset \(offset) length \(length): \(String(describing: error))")
        }
        var append = AppendUploadRequest()
        var begin = BeginUploadRequest()
        begin.totalSize = 100
        append.uploadId = try await client.call(ImageServiceRPC.beginUpload, begin).uploadId
        append.offset = Int64.max
        append.data = [1, 2, 3]
        #expect(await rpcError { try await client.call(ImageServiceRPC.appendUpload, append) }?.code == .outOfRange)
        var rendition = GetRenditionRequest()
        rendition.key = info.key
        rendition.width = 64
        rendition.height = 64
        let thumb = try await client.call(ImageServiceRPC.getRendition, rendition)
        #expect(thumb.info?.height == 64 && (thumb.info?.width ?? 99) < 64 && !thumb.data.isEmpty)

        // Damage the blob on disk, restart (cold cache): DATA_LOSS, never the wrong bytes.
        let hex = info.key.replacingOccurrences(of: "-", with: "")
        let path = "\(harness.dataDirectory)/images/blobs/\(hex.prefix(2))/\(info.key)"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[1000] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try harness.restart(.imageService)
        let damaged = await rpcError { try await Self.get(client, info.key) }
        #expect(damaged?.code == .dataLoss)

        var delete = DeleteImageRequest()
        delete.key = info.key
        _ = try await client.call(ImageServiceRPC.deleteImage, delete)
        #expect(await rpcError { try await client.call(ImageServiceRPC.deleteImage, delete) }?.code == .notFound)
        var owner = DeleteImagesForOwnerRequest()
        owner.ownerKey = "item-7"
        #expect(try await client.call(ImageServiceRPC.deleteImagesForOwner, owner).deletedCount == 0)
    }

    @Test func cacheStatsAndPurgeCacheOverTheWire() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        let info = try await Self.put(client, try Self.photo("Landscape_2.jpg"))
        _ = try await Self.get(client, info.key)
        let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(stats.entries >= 1 && stats.bytes > 0 && stats.bytes <= stats.budgetBytes && stats.hits >= 1)
        let purged = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        #expect(purged.entries == 0 && purged.bytes == 0 && purged.freedBytes >= Int64(info.sizeBytes))
        let after = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest())
        #expect(after.entries == 0)
        #expect(after.purges.first { $0.reason == "manual" }?.count == 1)
        #expect(after.purges.first { $0.reason == "critical" }?.count == 1)
        // Still served, from disk.
        #expect(try await Self.get(client, info.key).info?.checksum == info.checksum)
    }

    @Test func concurrentPutsAndGetsFromSeveralClients() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let ok = try await withThrowingTaskGroup(of: Bool.self) { group in
            for c in 0..<4 {
                group.addTask {
                    let client = try harness.client(.imageService)
                    defer { client.close() }
                    for i in 0..<6 {
                        var data: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
                        data += (0..<(20_000 + c * 1000 + i)).map { UInt8(truncatingIfNeeded: $0 &* (c + 3)) }
                        let info = try await Self.put(client, data, owner: "client-\(c)")
                        guard try await Self.get(client, info.key).data == data else { return false }
                    }
                    return true
                }
            }
            return try await group.reduce(true) { $0 && $1 }
        }
        #expect(ok)
        let client = try harness.client(.imageService)
        defer { client.close() }
        var list = ListImagesRequest()
        list.pageSize = 1000
        #expect(try await client.call(ImageServiceRPC.listImages, list).images.count == 24)
    }

    /// 200 MiB through BeginUpload/AppendUpload/CommitUpload, streamed chunk by chunk on both sides.
    @Test func twoHundredMiBChunkedUploadRoundTrips() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let client = try harness.client(.imageService)
        defer { client.close() }
        let total = 200 << 20
        // One random MiB, repeated with its index stamped in, so no chunk equals another.
        var block = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) }
        block.replaceSubrange(0..<12, with: [0, 0, 0, 16] + Array("ftypisom".utf8))
        func mebibyte(_ index: Int) -> [UInt8] {
            var copy = block
            if index > 0 { withUnsafeBytes(of: UInt64(index).bigEndian) { copy.replaceSubrange(0..<8, with: $0) } }
            return copy
        }
        var hash = SHA256()
        for i in 0..<(total >> 20) { hash.update(mebibyte(i)) }
        let checksum = hash.checksum()

        var begin = BeginUploadRequest()
        begin.ownerKey = "video-owner"
        begin.totalSize = Int64(total)
        begin.checksum = checksum
        begin.mediaType = .movie
        let ticket = try await client.call(ImageServiceRPC.beginUpload, begin)
        #expect(ticket.maxChunkBytes >= 1 << 20)
        let perChunk = Int(ticket.maxChunkBytes) >> 20
        var offset = 0
        while offset < total {
            var append = AppendUploadRequest()
            append.uploadId = ticket.uploadId
            append.offset = Int64(offset)
            let first = offset >> 20
            var chunk: [UInt8] = []
            chunk.reserveCapacity(perChunk << 20)
            for i in first..<min(total >> 20, first + perChunk) { chunk.append(contentsOf: mebibyte(i)) }
            append.data = chunk
            let reply = try await client.call(ImageServiceRPC.appendUpload, append, options: .init(timeoutMilliseconds: 60_000))
            offset += append.data.count
            #expect(reply.receivedBytes == Int64(offset))
        }
        var commit = CommitUploadRequest()
        commit.uploadId = ticket.uploadId
        let info = try await client.call(ImageServiceRPC.commitUpload, commit, options: .init(timeoutMilliseconds: 120_000))
        #expect(info.sizeBytes == Int64(total) && info.checksum == checksum && info.mediaType == .movie)

        // Whole: over the reply limit, so it must be read in ranges.
        let whole = await rpcError { try await Self.get(client, info.key) }
        #expect(whole?.code == .resourceExhausted)
        // Read back in ranges (the first one verifies the whole blob on the server) and compare.
        var position = 0
        var mismatches = 0
        while position < total {
            let part = try await Self.get(client, info.key, offset: Int64(position), length: Int64(min(16 << 20, total - position)))
            #expect(part.data.count == min(16 << 20, total - position))
            for i in 0..<(part.data.count >> 20) where !Self.same(part.data, at: i << 20, as: mebibyte((position >> 20) + i)) {
                mismatches += 1
            }
            position += part.data.count
        }
        #expect(mismatches == 0)
        let tail = try await Self.get(client, info.key, offset: Int64(total) - 1, length: 1)
        #expect(tail.data == [mebibyte(199)[(1 << 20) - 1]])
        #expect(await rpcError { try await Self.get(client, info.key, offset: Int64(total) - 1, length: 2) }?.code == .outOfRange)
    }
}
