import Foundation
import Proto
import RPC
import Runtime
import SQLite
import Locking
import Testing
@testable import ImageService

/// What survives a crash or a failure: folders fsynced into their parents, a put whose fsync
/// fails after its commit keeps both row and blob and stops the store, and blobs without a row
/// are moved aside at start-up, never deleted.
@Suite struct DurabilityTests {
    /// The folders a store fsyncs, in order.
    final class SyncedFolders: Sendable {
        let paths = Locked<[String]>([])
        var all: [String] { paths.withLock { $0 } }
        func clear() { paths.withLock { $0 = [] } }
    }

    static func recording(_ hooks: StoreHooks) -> SyncedFolders {
        let synced = SyncedFolders()
        hooks.set { $0.folderSync = { path in synced.paths.withLock { $0.append(path) } } }
        return synced
    }

    @Test func everyFolderTheStoreMakesIsFsyncedIntoItsParent() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let synced = Self.recording(hooks)
        // The data directory does not exist yet: the first start of a service.
        let root = folder.path + "/data/images"
        let store = try ImageStore(folder: root, cache: ImageCache(budgetBytes: 1 << 20), logger: testLogger, hooks: hooks).started()
        defer { store.close() }
        // data/ into the temporary folder, images/ into data/, blobs/ and tmp/ into images/,
        // the 256 fan-out folders into blobs/.
        #expect(Set(synced.all).isSuperset(of: [folder.path, folder.path + "/data", root, root + "/blobs"]), "\(synced.all)")
        #expect(FileManager.default.fileExists(atPath: root + "/tmp") && FileManager.default.fileExists(atPath: root + "/blobs/ff"))

        // A second start makes nothing and fsyncs no folder.
        store.close()
        synced.clear()
        let again = try ImageStore(folder: root, cache: ImageCache(budgetBytes: 1 << 20), logger: testLogger, hooks: hooks).started()
        defer { again.close() }
        #expect(synced.all.isEmpty, "\(synced.all)")

        // A fan-out folder that went missing is made again, into blobs/, before the rename into it.
        let key = "cd" + UUID().uuidString.lowercased().dropFirst(2)
        try FileManager.default.removeItem(atPath: root + "/blobs/cd")
        let data = Samples.mp4(2000)
        _ = try await again.put(data, NewImage(key: key))
        #expect(synced.all.prefix(2) == [root + "/blobs", root + "/blobs/cd"], "\(synced.all)")
        #expect(try await again.read(try await again.info(key)) == data)
    }

    @Test func aPutWhoseFolderFsyncFailsAfterItsCommitStopsTheStoreAndKeepsRowAndBlob() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let faults = Locked<[String]>([])
        let store = try ImageStore(
            folder: folder.path + "/images", cache: ImageCache(budgetBytes: 1024), logger: testLogger, hooks: hooks,
            onFault: { reason in faults.withLock { $0.append(reason) } }
        ).started()
        defer { store.close() }
        let key = UUID().uuidString.lowercased()
        let fanOut = store.blobs.blobsFolder + "/" + key.prefix(2)
        // The fsync that makes the rename durable fails after the row is committed. It is not
        // tried again and trusted, nor is the row taken back (another write on that disk): the
        // store stops taking writes and says the put's fate is unknown.
        hooks.set { $0.folderSync = { path in if path == fanOut { throw BlobIOError(operation: "fsync", path: path, code: EIO) } } }
        let data = Samples.mp4(20_000)
        do {
            _ = try await store.put(data, NewImage(key: key))
            Issue.record("the put succeeded although its folder fsync failed")
        } catch {
            #expect(error is CommitOutcomeUnknown, "\(error)")
            #expect("\(error)".contains("fsync \(fanOut)"), "\(error)")
        }
        #expect(faults.withLock { $0.count } == 1)
        hooks.set { $0 = StoreHooks.Hooks() }
        do {
            _ = try await store.put(Samples.mp4(3000), NewImage())
            Issue.record("a put was taken after the fault")
        } catch {
            #expect(error is StorageFaulted, "\(error)")
        }
        // Row and blob are both there (not a row without its bytes): the image reads whole after
        // a restart, and nothing was quarantined or found missing.
        store.close()
        let reopened = try makeStore(folder, budget: 1024)
        defer { reopened.close() }
        #expect(try await reopened.read(try await reopened.info(key)) == data)
        #expect(reopened.recovery.quarantined == 0 && reopened.recovery.missingFiles.isEmpty)
    }

    /// images.db and its WAL files, copied aside or back (the service stopped).
    static func copyIndex(from source: String, to target: String) throws {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] {
            let to = "\(target)/images.db\(suffix)"
            try? FileManager.default.removeItem(atPath: to)
            if FileManager.default.fileExists(atPath: "\(source)/images.db\(suffix)") {
                try FileManager.default.copyItem(atPath: "\(source)/images.db\(suffix)", toPath: to)
            }
        }
    }

    @Test func blobsUnknownToARestoredOlderIndexAreQuarantinedByteForByteAndReported() async throws {
        let folder = try TemporaryFolder()
        let root = folder.path + "/data/images"
        func open(_ clock: any WallClock = SystemClock()) throws -> ImageStore {
            try ImageStore(folder: root, cache: ImageCache(budgetBytes: 1024), clock: clock, logger: testLogger).started()
        }
        var store = try open()
        let older = [Samples.mp4(3000), Samples.mp4(4000)]
        var olderKeys: [String] = []
        for data in older { olderKeys.append(try await store.put(data, NewImage(ownerKey: "o")).info.key) }
        store.close()
        try Self.copyIndex(from: root, to: folder.path + "/backup")

        store = try open()
        // Newer photos, one large enough to be written around the page cache.
        let newer = [Samples.mp4(5000), Samples.mp4(3 << 20)]
        var newerKeys: [String] = []
        for data in newer { newerKeys.append(try await store.put(data, NewImage(ownerKey: "o")).info.key) }
        store.close()

        // The operator restores the older images.db.
        try Self.copyIndex(from: folder.path + "/backup", to: root)
        let clock = ManualClock(milliseconds: 1_796_000_000_000)  // 2026-11-30T00:53:20Z
        store = try open(clock)
        #expect(store.recovery.quarantined == 2)
        #expect(store.recovery.quarantineFolder == root + "/quarantine/2026-11-30T00-53-20Z")
        for (key, data) in zip(newerKeys, newer) {
            let moved = store.recovery.quarantineFolder + "/" + key
            #expect(FileManager.default.contents(atPath: moved) == Data(data), "\(key) not in quarantine whole")
            #expect(!store.blobs.exists(key: key))
            #expect(await storeError { try await store.info(key) } == .notFound("key \(key): no such image"))
        }
        for (key, data) in zip(olderKeys, older) { #expect(try await store.read(try await store.info(key)) == data) }
        store.close()

        // The service reports it (ImageService/Stats); a start in the same second gets a folder
        // of its own, and finds nothing more to move.
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let stats = try await client.call(ImageServiceRPC.stats, ImageStatsRequest())
        #expect(stats.quarantinedBlobs == 0 && stats.quarantineFolder.isEmpty && stats.missingBlobs == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/quarantine") == ["2026-11-30T00-53-20Z"])
    }

    @Test func imageServiceStatsReportsTheQuarantineOfItsStart() async throws {
        let folder = try TemporaryFolder()
        let root = folder.path + "/data/images"
        var store = try ImageStore(folder: root, cache: ImageCache(budgetBytes: 1024), logger: testLogger).started()
        let kept = try await store.put(Samples.mp4(3000), NewImage()).info
        let lost = try await store.put(Samples.mp4(4000), NewImage()).info
        store.close()
        // A file without a row and a row without a file.
        store = try ImageStore(folder: root, cache: ImageCache(budgetBytes: 1024), logger: testLogger).started()
        let unindexed = try store.blobs.writeTemporary(Samples.mp4(6000), key: "ab000000-0000-4000-8000-000000000001")
        try store.blobs.publish(temporary: unindexed, key: "ab000000-0000-4000-8000-000000000001")
        try FileManager.default.removeItem(atPath: store.blobs.path(of: lost.key))
        store.close()

        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let stats = try await client.call(ImageServiceRPC.stats, ImageStatsRequest())
        #expect(stats.quarantinedBlobs == 1 && stats.missingBlobs == 1 && stats.finishedPuts == 0)
        #expect(stats.quarantineFolder.hasPrefix(root + "/quarantine/"))
        #expect(FileManager.default.contents(atPath: stats.quarantineFolder + "/ab000000-0000-4000-8000-000000000001") == Data(Samples.mp4(6000)))
        var get = GetImageRequest()
        get.key = kept.key
        #expect(try await client.call(ImageServiceRPC.getImage, get).data == Samples.mp4(3000))
    }
}
