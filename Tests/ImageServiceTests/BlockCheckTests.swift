import Digest
import Foundation
import Locking
import SQLite
import Testing
@testable import ImageService

/// Every byte a read hands over is verified: each 1 MiB block against the XXH64 its row keeps,
/// whatever the file's size and modification time say.
@Suite struct BlockCheckTests {
    static let block = BlockChecks.blockSize

    /// Flips one byte of the file at `path` and puts its access and modification times back:
    /// size, inode and mtime are as before (silent media corruption).
    static func corruptKeepingTimes(_ path: String, at offset: Int) throws {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        var before = stat()
        #expect(fstat(fd, &before) == 0)
        var byte: UInt8 = 0
        #expect(pread(fd, &byte, 1, off_t(offset)) == 1)
        byte ^= 0xFF
        #expect(pwrite(fd, &byte, 1, off_t(offset)) == 1)
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        var after = stat()
        #expect(fstat(fd, &after) == 0)
        #expect(after.st_size == before.st_size && after.st_ino == before.st_ino)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
    }

    static func isDataLoss(_ error: ImageStoreError?, naming text: String) -> Bool {
        guard case .damaged(let message) = error else { return false }
        return message.contains(text)
    }

    @Test func aByteCorruptedBehindAnUnchangedSizeAndMtimeIsDataLossInTheBlocksThatHoldIt() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 1024)  // nothing cached: every range reads the file
        defer { store.close() }
        let data = Samples.mp4(3 * Self.block + 1000)  // four blocks, the last one short
        let info = try await store.put(data, NewImage()).info
        #expect(try await store.image(info.key).blockChecks == data.withUnsafeBytes { BlockChecks.of($0) })
        // Ranges read (and verified) before the damage.
        #expect(try await store.read(info, offset: 10, length: 100) == Array(data[10..<110]))
        #expect(try await store.read(info, offset: Int64(2 * Self.block + 100), length: 100) == Array(data[(2 * Self.block + 100)..<(2 * Self.block + 200)]))

        try Self.corruptKeepingTimes(store.blobs.path(of: info.key), at: 2 * Self.block + 12_345)

        let inBlock = await storeError { try await store.read(info, offset: Int64(2 * Self.block + 12_000), length: 1000) }
        #expect(Self.isDataLoss(inBlock, naming: "block 2 (bytes \(2 * Self.block)–\(3 * Self.block - 1))"), "\(String(describing: inBlock))")
        let spanning = await storeError { try await store.read(info, offset: Int64(Self.block + 5), length: Int64(Self.block)) }
        #expect(Self.isDataLoss(spanning, naming: "block 2"), "\(String(describing: spanning))")
        let whole = await storeError { try await store.read(info) }
        #expect(Self.isDataLoss(whole, naming: "block 2"), "\(String(describing: whole))")
        // Ranges in the other blocks still read.
        #expect(try await store.read(info, offset: Int64(Self.block + 5), length: 100) == Array(data[(Self.block + 5)..<(Self.block + 105)]))
        #expect(try await store.read(info, offset: Int64(3 * Self.block), length: 0) == Array(data[(3 * Self.block)...]))
    }

    /// GetImage's read at the store: the cache first, as the handler does, else the path that
    /// reads from the file into the reply's frame (here a buffer of the test's).
    static func getImage(_ store: ImageStore, _ key: String, offset: Int64 = 0, length: Int64 = 0) async throws -> [UInt8] {
        if let hit = store.cachedRead(key, offset: offset, length: length) { return Array(hit.bytes) }
        return try await withVisibleCheckedThrowingContinuation { continuation in
            store.read(
                key: key, offset: offset, length: length, accept: { _ in }, into: { _, count in BufferTarget(count: count) },
                done: { result in continuation.resume(with: result.map { Array($0.bytes) }) })
        }
    }

    @Test func aRangeInUndamagedBlocksOfADamagedBlobIsAnsweredOnEveryRetryAndCachesNothing() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 16 << 20)  // takes blobs up to 4 MiB on their second read
        defer { store.close() }
        let data = Samples.mp4(3 * Self.block)
        let info = try await store.put(data, NewImage()).info
        try Self.corruptKeepingTimes(store.blobs.path(of: info.key), at: 2 * Self.block + 12_345)
        let expected = Array(data[10..<110])
        var outcomes: [String] = []
        for _ in 0..<6 {
            do {
                outcomes.append(try await Self.getImage(store, info.key, offset: 10, length: 100) == expected ? "ok" : "wrong bytes")
            } catch {
                outcomes.append("\(error)")
            }
        }
        for _ in 0..<6 {
            do {
                outcomes.append(try await store.read(info, offset: 10, length: 100) == expected ? "ok" : "wrong bytes")
            } catch {
                outcomes.append("\(error)")
            }
        }
        #expect(outcomes == Array(repeating: "ok", count: 12), "\(outcomes)")
        // A range of some of the blocks never read the whole blob to cache it.
        #expect(store.cache.statistics.entries == 0)
        // Whole, or in the damaged block, it stays DATA_LOSS however often it is asked for.
        for _ in 0..<4 {
            let whole = await storeError { try await Self.getImage(store, info.key) }
            #expect(Self.isDataLoss(whole, naming: "block 2"), "\(String(describing: whole))")
            let inBlock = await storeError { try await Self.getImage(store, info.key, offset: Int64(2 * Self.block) + 1, length: 10) }
            #expect(Self.isDataLoss(inBlock, naming: "block 2"), "\(String(describing: inBlock))")
        }
        #expect(try await Self.getImage(store, info.key, offset: 10, length: 100) == expected)
    }

    @Test func aRangeOfSomeBlocksIsReadAloneAndAWholeReadCachesTheBlobOnItsSecondRead() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 16 << 20)
        defer { store.close() }
        let data = Samples.mp4(3 * Self.block)
        let info = try await store.put(data, NewImage()).info
        for _ in 0..<3 {
            #expect(try await Self.getImage(store, info.key, offset: Int64(Self.block), length: 100) == Array(data[Self.block..<(Self.block + 100)]))
            #expect(try await store.read(info, offset: 7, length: 1000) == Array(data[7..<1007]))
        }
        #expect(store.cache.statistics.entries == 0)
        #expect(try await Self.getImage(store, info.key) == data)
        #expect(store.cache.statistics.entries == 0)  // read once: not cached
        // A range that reaches into every block reads all of them anyway: its read counts.
        let spanning = try await Self.getImage(store, info.key, offset: 5, length: Int64(data.count - 10))
        #expect(spanning == Array(data[5..<(data.count - 5)]))
        #expect(store.cachedRead(info.key, offset: 0, length: 0).map { Array($0.bytes) } == data)
    }

    /// Clears the block checks of every row, as rows stored before they existed have none.
    static func clearBlockChecks(_ folder: TemporaryFolder) throws {
        let db = try Database(path: folder.path + "/images/images.db")
        defer { try? db.close() }
        try db.execute("UPDATE images SET block_checks = x''")
    }

    @Test func aRowWithoutBlockChecksIsVerifiedWholeOnceAndThenGetsThem() async throws {
        let folder = try TemporaryFolder()
        var store = try makeStore(folder, budget: 1024)
        let data = Samples.mp4(2 * Self.block + 7)
        let info = try await store.put(data, NewImage()).info
        store.close()
        try Self.clearBlockChecks(folder)

        store = try makeStore(folder, budget: 1024)
        defer { store.close() }
        #expect(try await store.image(info.key).blockChecks.isEmpty)
        #expect(try await store.read(info, offset: Int64(Self.block) + 3, length: 10) == Array(data[(Self.block + 3)..<(Self.block + 13)]))
        // The read verified the whole file and stored what it computed (the index queue runs
        // this lookup after that write).
        let backfilled = try await store.indexWrite { try $0.stored(info.key) }
        #expect(backfilled?.blockChecks == data.withUnsafeBytes { BlockChecks.of($0) })

        // From now on each range checks its own blocks.
        try Self.corruptKeepingTimes(store.blobs.path(of: info.key), at: 5)
        let damaged = await storeError { try await store.read(info, offset: 0, length: 10) }
        #expect(Self.isDataLoss(damaged, naming: "block 0"), "\(String(describing: damaged))")
        #expect(try await store.read(info, offset: Int64(2 * Self.block), length: 0) == Array(data[(2 * Self.block)...]))
    }

    @Test func aDamagedRowWithoutBlockChecksIsDataLossAndGetsNone() async throws {
        let folder = try TemporaryFolder()
        var store = try makeStore(folder, budget: 1024)
        let data = Samples.mp4(Self.block + 500)
        let info = try await store.put(data, NewImage()).info
        store.close()
        try Self.clearBlockChecks(folder)
        store = try makeStore(folder, budget: 1024)
        defer { store.close() }
        try Self.corruptKeepingTimes(store.blobs.path(of: info.key), at: Self.block + 100)
        // A range in the undamaged block: the whole file is verified first, and it is damaged.
        let damaged = await storeError { try await store.read(info, offset: 0, length: 10) }
        #expect(Self.isDataLoss(damaged, naming: "content checksum"), "\(String(describing: damaged))")
        #expect(try await store.indexWrite { try $0.stored(info.key) }?.blockChecks.isEmpty == true)
    }

    @Test func blockChecksCoverEveryBlockAndSurviveTheIndexColumn() {
        for size in [1, 4096, Self.block - 1, Self.block, Self.block + 1, 3 * Self.block] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 13) }
            let checks = bytes.withUnsafeBytes { BlockChecks.of($0) }
            #expect(checks.digests.count == BlockChecks.count(forSize: Int64(size)), "size \(size)")
            for (index, digest) in checks.digests.enumerated() {
                var hash = XXHash64()
                hash.update(Array(bytes[(index * Self.block)..<min(size, (index + 1) * Self.block)]))
                #expect(digest == hash.digest(), "size \(size) block \(index)")
            }
            #expect(BlockChecks(encoded: checks.encoded) == checks)
        }
        #expect(BlockChecks(encoded: [1, 2, 3]).isEmpty)
    }
}

/// Memory of the test's own for a read into a reply's frame.
final class BufferTarget: ReadTarget, @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int) { bytes = .allocate(byteCount: count, alignment: 16) }

    deinit { bytes.deallocate() }
}
