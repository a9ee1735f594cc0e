import Digest
import Foundation
import Proto
import Runtime
import Testing
@testable import ImageService

/// What a crash or a lost file leaves, and what the next start and the next put make of it.
@Suite struct ImageStoreRecoveryTests {
    @Test func crashBetweenTemporaryWriteAndRenameLeavesNothingVisible() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let key = UUID().uuidString.lowercased()
        // The process dies after the fsynced temporary write, before rename and insert.
        let temporary = try store.blobs.writeTemporary(try Samples.jpeg(), key: key)
        #expect(FileManager.default.fileExists(atPath: temporary))
        // And another dies after the rename, before the index insert.
        let renamed = UUID().uuidString.lowercased()
        try store.blobs.write(try Samples.jpeg(), key: renamed)

        let restarted = try makeStore(folder)
        #expect(!FileManager.default.fileExists(atPath: temporary))
        #expect(!FileManager.default.fileExists(atPath: restarted.blobs.path(of: renamed)))
        #expect(await storeError { try await restarted.info(key) } == .notFound("key \(key): no such image"))
        #expect(await storeError { try await restarted.info(renamed) } == .notFound("key \(renamed): no such image"))
        #expect(try await restarted.list().images.isEmpty)
    }

    @Test func aPutCommittedBeforeItsRenameReachedTheDiskIsFinishedAtStart() async throws {
        // A put commits its row while the folder fsync that makes its rename durable runs; a
        // crash in between leaves the row and the whole, fsynced temporary file.
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let photo = try Samples.photo("Landscape_6.jpg")
        let movie = Samples.mp4(3 << 20)  // large enough to be written around the page cache
        let kept = try await store.put(photo, NewImage(ownerKey: "o")).info
        let large = try await store.put(movie, NewImage(ownerKey: "o")).info
        let damaged = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "o")).info
        for (info, suffix) in [(kept, "17"), (large, "4294967295"), (damaged, "3")] {
            try FileManager.default.moveItem(
                atPath: store.blobs.path(of: info.key), toPath: "\(store.blobs.temporaryFolder)/\(info.key).\(suffix).tmp")
        }
        // This one's temporary file is not what was committed: it must not become the blob.
        let damagedTemporary = "\(store.blobs.temporaryFolder)/\(damaged.key).3.tmp"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: damagedTemporary)))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: damagedTemporary))
        // And a leftover of a put that never committed.
        let uncommitted = try store.blobs.writeTemporary(try Samples.jpeg(), key: UUID().uuidString.lowercased())

        let restarted = try makeStore(folder)
        #expect(try await restarted.read(try await restarted.info(kept.key)) == photo)
        #expect(try await restarted.read(try await restarted.info(large.key)) == movie)
        let lost = await storeError { try await restarted.read(try await restarted.info(damaged.key)) }
        #expect(lost.map { if case .damaged = $0 { true } else { false } } == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: restarted.blobs.temporaryFolder).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: uncommitted))
        #expect(Set(try await restarted.list(ownerKey: "o", pageSize: 10).images.map(\.key)) == [kept.key, large.key, damaged.key])
    }

    @Test func aPutThatCannotBeRenamedOrIndexedLeavesNothingBehind() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let photo = try Samples.jpeg()
        // The rename fails: the key's fan-out folder is a file.
        let key = "ab" + UUID().uuidString.lowercased().dropFirst(2)
        let fanOut = (store.blobs.path(of: key) as NSString).deletingLastPathComponent
        try FileManager.default.removeItem(atPath: fanOut)
        #expect(FileManager.default.createFile(atPath: fanOut, contents: Data("not a folder".utf8)))
        do {
            _ = try await store.put(photo, NewImage(key: key))
            Issue.record("the put succeeded although its folder is a file")
        } catch {
            #expect("\(error)".contains("rename"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder).isEmpty)
        #expect(await storeError { try await store.info(key) } == .notFound("key \(key): no such image"))

        // The row cannot be committed: the store closed under the put.
        let otherFolder = try TemporaryFolder()
        let other = try makeStore(otherFolder)
        other.close()
        let commitError = await storeError { try await other.put(photo, NewImage()) }
        #expect(commitError == .failedPrecondition("the image store is closed (stopping)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: other.blobs.temporaryFolder).isEmpty)
        #expect(other.blobs.allKeys().isEmpty)
    }

    @Test func onlyTheTemporaryFilesOfPutsAreTakenForBlobs() {
        let key = UUID().uuidString.lowercased()
        #expect(BlobStore.key(ofTemporary: "\(key).123.tmp") == key)
        #expect(BlobStore.key(ofTemporary: "upload-\(key).part") == nil)
        #expect(BlobStore.key(ofTemporary: "\(key).tmp") == nil)
        #expect(BlobStore.key(ofTemporary: "\(key).12x.tmp") == nil)
        #expect(BlobStore.key(ofTemporary: "short.1.tmp") == nil)
    }

    @Test func aPutRetriedWithItsKeyAfterItsBlobWasLostStoresTheBytesAgain() async throws {
        // A crash after the row committed and before the rename reached the disk, with the
        // temporary file's entry in tmp/ lost too: the row stays, its blob is gone, and the
        // put was never acknowledged. Its client retries with the same key.
        let folder = try TemporaryFolder()
        var store = try makeStore(folder)
        let small = try Samples.photo("Landscape_6.jpg")
        let large = Samples.mp4(3 * BlockChecks.blockSize + 5)  // written around the page cache, not cached on put
        let smallKey = UUID().uuidString.lowercased(), largeKey = UUID().uuidString.lowercased()
        let first = try await store.put(small, NewImage(ownerKey: "o", key: smallKey)).info
        let firstLarge = try await store.put(large, NewImage(ownerKey: "o", key: largeKey)).info
        store.close()
        for key in [smallKey, largeKey] { try FileManager.default.removeItem(atPath: store.blobs.path(of: key)) }
        store = try makeStore(folder)
        #expect(store.recovery.missingFiles == [smallKey, largeKey].sorted())
        let lost = await storeError { try await store.read(first) }
        #expect(lost.map { if case .damaged = $0 { true } else { false } } == true, "\(String(describing: lost))")

        // The same bytes: written as the row's blob, the row kept as it was.
        let retried = try await store.put(small, NewImage(ownerKey: "o", key: smallKey))
        let retriedLarge = try await store.put(large, NewImage(ownerKey: "o", key: largeKey.uppercased()))
        #expect(retried.created && retried.info == first)
        #expect(retriedLarge.created && retriedLarge.info == firstLarge)
        #expect(try await store.read(first) == small)
        #expect(try await store.read(firstLarge) == large)
        #expect(try await store.read(firstLarge, offset: Int64(2 * BlockChecks.blockSize), length: 10) == Array(large[(2 * BlockChecks.blockSize)..<(2 * BlockChecks.blockSize + 10)]))
        // A further retry finds both, as before.
        let again = try await store.put(small, NewImage(ownerKey: "o", key: smallKey))
        #expect(!again.created && again.info == first)
        store.close()
        store = try makeStore(folder)  // durable: nothing missing after another start
        defer { store.close() }
        #expect(store.recovery.missingFiles.isEmpty)
        store.cache.purge(.critical, reason: "manual")
        #expect(try await store.read(first) == small && store.recovery.missingFiles.isEmpty)
        #expect(try await store.read(firstLarge) == large)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder).isEmpty)
    }

    @Test func aPutWithTheKeyOfARowWithoutItsBlobAndOtherBytesReplacesTheLostImage() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let key = UUID().uuidString.lowercased()
        let old = try Samples.photo("Landscape_6.jpg")
        let first = try await store.put(old, NewImage(ownerKey: "o", key: key)).info
        // Its blob goes while the service runs (cached on put: the cache must not answer for it).
        try FileManager.default.removeItem(atPath: store.blobs.path(of: key))
        let newer = Samples.mp4(2 * BlockChecks.blockSize)
        let replaced = try await store.put(newer, NewImage(ownerKey: "p", key: key))
        #expect(replaced.created)
        #expect(replaced.info.key == key && replaced.info.ownerKey == "p" && replaced.info.sizeBytes == Int64(newer.count))
        #expect(replaced.info.checksum == SHA256.checksum(newer) && replaced.info.checksum != first.checksum)
        #expect(try await store.info(key) == replaced.info)
        #expect(try await store.read(replaced.info) == newer)
        #expect(store.cachedRead(key, offset: 0, length: 0).map { $0.image.info.checksum } == nil)
        #expect(try await store.list(ownerKey: "o").images.isEmpty)
        #expect(try await store.list(ownerKey: "p").images.map(\.key) == [key])
        let again = try await store.put(old, NewImage(ownerKey: "o", key: key))
        #expect(!again.created && again.info == replaced.info)
    }
}

/// The quarantine of each start is kept for the retention, then removed whole.
@Suite struct QuarantineRetentionTests {
    @Test func aStartsQuarantineIsRemovedOnceItIsOlderThanTheRetentionAndNothingElseIs() async throws {
        let folder = try TemporaryFolder()
        let day: Int64 = 24 * 3600 * 1000
        let start = ImageStore.quarantineNameToMilliseconds("2026-12-01T12-00-00Z")!
        let clock = ManualClock(milliseconds: start)
        let quarantine = folder.path + "/images/quarantine"
        // Two old starts (the second of the same second), a recent one, and a folder an operator made.
        let names = ["2026-10-01T08-00-00Z", "2026-10-01T08-00-00Z-2", ImageStore.quarantineName(start - day), "put-back-later"]
        for name in names {
            try FileManager.default.createDirectory(atPath: quarantine + "/" + name, withIntermediateDirectories: true)
            try Data("a photo".utf8).write(to: URL(fileURLWithPath: quarantine + "/" + name + "/" + UUID().uuidString.lowercased()))
        }
        let limits = ImageStoreLimits(quarantineRetentionMilliseconds: 30 * day)
        let store = try makeStore(folder, limits: limits, clock: clock)
        defer { store.close() }
        // The start removed the two of October.
        func left() throws -> Set<String> { Set(try FileManager.default.contentsOfDirectory(atPath: quarantine)) }
        #expect(try left() == [names[2], "put-back-later"])
        clock.advance(by: 30 * day)
        #expect(store.pruneQuarantine() == [names[2]])
        #expect(try left() == ["put-back-later"])

        let keeping = try makeStore(try TemporaryFolder(), limits: ImageStoreLimits(quarantineRetentionMilliseconds: ImageStoreLimits.keepQuarantine), clock: clock)
        defer { keeping.close() }
        try FileManager.default.createDirectory(atPath: keeping.blobs.quarantineFolder + "/2000-01-01T00-00-00Z", withIntermediateDirectories: true)
        #expect(keeping.pruneQuarantine().isEmpty)
    }
}
