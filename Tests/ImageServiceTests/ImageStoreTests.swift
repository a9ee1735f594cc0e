import Digest
import Foundation
import Proto
import Runtime
import Testing
@testable import ImageService

@Suite struct ImageStoreTests {
    @Test func everyKindRoundTripsWithItsChecksum() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let photo = try Samples.photo("Landscape_6.jpg")
        let (original, created) = try await store.put(photo, NewImage(ownerKey: "item-1"))
        #expect(created)
        #expect(original.kind == .original && original.mediaType == .image && original.contentType == "image/jpeg")
        #expect(original.orientation == 6 && original.width > 0 && original.height > 0)
        #expect(original.checksum == SHA256.checksum(photo) && original.sizeBytes == Int64(photo.count))

        let edited = try await store.put(try Samples.jpeg(width: 40, height: 40), NewImage(kind: .edited, parentKey: original.key)).info
        let thumb = try await store.put(try Samples.jpeg(width: 32, height: 24), NewImage(kind: .thumbnail, parentKey: original.key)).info
        let movieBytes = Samples.mp4()
        let movie = try await store.put(movieBytes, NewImage(ownerKey: "item-1")).info
        #expect(edited.ownerKey == "item-1" && edited.parentKey == original.key)
        #expect(thumb.kind == .thumbnail && thumb.width == 32 && thumb.height == 24)
        #expect(movie.mediaType == .movie && movie.contentType == "video/mp4" && movie.orientation == 0)

        // A fresh store (no cache) reads every blob from disk and verifies it.
        let reopened = try makeStore(folder)
        for info in [original, edited, thumb, movie] {
            let stat = try await reopened.info(info.key)
            #expect(stat == info)
            let bytes = try await reopened.read(stat)
            #expect(SHA256.checksum(bytes) == info.checksum)
            #expect(Int64(bytes.count) == info.sizeBytes)
        }
    }

    @Test func blobCorruptedOnDiskReadsAsDataLossNeverServed() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let info = try await store.put(try Samples.jpeg(), NewImage()).info
        let path = store.blobs.path(of: info.key)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x55
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let fresh = try makeStore(folder)  // the first store cached the good bytes
        let whole = await storeError { try await fresh.read(info) }
        guard case .damaged(let message) = whole else { Issue.record("expected DATA_LOSS, got \(String(describing: whole))"); return }
        #expect(message.contains(info.key) && message.contains("checksum"))
        let ranged = await storeError { try await fresh.read(info, offset: 0, length: 10) }
        #expect(ranged.map { if case .damaged = $0 { true } else { false } } == true)

        // A truncated file (size differs) and a missing file are DATA_LOSS as well.
        try Data(bytes.prefix(10)).write(to: URL(fileURLWithPath: path))
        #expect(await storeError { try await fresh.read(info) }.map { if case .damaged = $0 { true } else { false } } == true)
        try FileManager.default.removeItem(atPath: path)
        let missing = await storeError { try await fresh.read(info) }
        #expect(missing.map { if case .damaged = $0 { true } else { false } } == true)
    }

    @Test func largeBlobVerifiedOnceIsStillCheckedAfterTheFileChanges() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 1024)  // nothing fits: ranges stream from disk
        let data = Samples.mp4(50_000)
        let info = try await store.put(data, NewImage()).info
        #expect(try await store.read(info, offset: 10, length: 5) == Array(data[10..<15]))
        #expect(try await store.read(info, offset: 20, length: 5) == Array(data[20..<25]))
        let path = store.blobs.path(of: info.key)
        var bytes = data
        bytes[40_000] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let error = await storeError { try await store.read(info, offset: 10, length: 5) }
        #expect(error.map { if case .damaged = $0 { true } else { false } } == true)
    }

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

    @Test func rangedReadsAtTheEdges() async throws {
        let folder = try TemporaryFolder()
        // A tiny budget: the 40 KB blob is never cached, so ranges stream from disk.
        for budget in [64 << 20, 1024] {
            let store = try makeStore(folder, budget: budget)
            let data = Samples.mp4(40_000)
            let info = try await store.put(data, NewImage()).info
            let size = Int64(data.count)
            #expect(try await store.read(info, offset: 0, length: 1) == [data[0]])
            #expect(try await store.read(info, offset: size - 1, length: 1) == [data[data.count - 1]])
            #expect(try await store.read(info, offset: size - 1, length: 0) == [data[data.count - 1]])
            #expect(try await store.read(info, offset: 0, length: size) == data)
            #expect(try await store.read(info, offset: 1000, length: 0) == Array(data[1000...]))
            #expect(try await store.read(info, offset: 1_048_570 % size, length: 7) == Array(data[Int(1_048_570 % size)..<Int(1_048_570 % size + 7)]))
            #expect(await storeError { try await store.read(info, offset: size, length: 0) }
                == .outOfRange("offset \(size) is past the end of image \(info.key) (\(size) bytes)"))
            #expect(await storeError { try await store.read(info, offset: size - 1, length: 2) }
                == .outOfRange("offset \(size - 1) + length 2 = \(size + 1) is past the end of image \(info.key) (\(size) bytes)"))
            #expect(await storeError { try await store.read(info, offset: -1, length: 0) } == .invalid("offset must be ≥ 0 (got -1)"))
            #expect(await storeError { try await store.read(info, offset: 0, length: -5) } == .invalid("length must be ≥ 0 (got -5)"))
        }
    }

    @Test func badInputIsRefusedPreciselyAndLeavesNothing() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, limits: ImageStoreLimits(maxPixels: 50_000_000))
        func refused(_ data: [UInt8], _ new: NewImage = NewImage()) async -> String {
            guard case .invalid(let message) = await storeError({ try await store.put(data, new) }) else { return "accepted" }
            return message
        }
        #expect(await refused([]) == "data is empty")
        #expect(await refused(Array("hello, world".utf8)).hasPrefix("data is not a JPEG image or a known movie container (first bytes: 68 65 6c"))
        let photo = try Samples.photo("Portrait_3.jpg")
        #expect(await refused(Array(photo.prefix(photo.count / 2))).hasPrefix("data: JPEG is"))
        #expect(await refused(Array(photo.prefix(300))).contains("JPEG"))
        #expect(await refused(try Samples.jpegClaiming(width: 65000, height: 65000))
            == "data: JPEG of 65000×65000 = 4225000000 pixels is over the limit of 50000000 pixels")
        #expect(await refused(try Samples.jpeg(), NewImage(contentType: "image/png"))
            == "content_type \"image/png\" does not match the data, which is image/jpeg")
        #expect(await refused(try Samples.jpeg(), NewImage(key: "not-a-uuid")) == "key \"not-a-uuid\" is not a UUID")
        #expect(await refused(try Samples.jpeg(), NewImage(kind: .thumbnail)) == "parent_key is required for kind THUMBNAIL")
        #expect(await refused(try Samples.jpeg(), NewImage(kind: .original, parentKey: UUID().uuidString))
            == "parent_key is only for EDITED and THUMBNAIL images (kind is ORIGINAL)")
        let ghost = UUID().uuidString.lowercased()
        #expect(await storeError { try await store.put(try Samples.jpeg(), NewImage(kind: .edited, parentKey: ghost)) }
            == .notFound("parent_key \(ghost): no such image"))
        #expect(await storeError { try await store.info(ghost) } == .notFound("key \(ghost): no such image"))
        #expect(await storeError { try await store.info("nope") } == .invalid("key \"nope\" is not a UUID"))
        #expect(await storeError { try await store.delete(ghost) } == .notFound("key \(ghost): no such image"))

        #expect(try await store.list().images.isEmpty)
        #expect(store.blobs.allKeys().isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder)).isEmpty)
    }

    @Test func readOfAnImageDeletedMeanwhileIsNotFoundNotDataLoss() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 1024)  // not cached: the read goes to the file
        let info = try await store.put(Samples.mp4(5000), NewImage()).info
        let image = try await store.image(info.key)
        _ = try await store.delete(info.key)
        #expect(await storeError { try await store.read(image) } == .notFound("key \(info.key): no such image (deleted)"))
    }

    @Test func lateCacheFillOfADeletedImageNeverServesItForAReusedKey() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let key = UUID().uuidString.lowercased()
        let old = Samples.mp4(3000), new = Samples.mp4(4000)
        _ = try await store.put(old, NewImage(key: key))
        let oldImage = try await store.image(key)
        _ = try await store.delete(key)
        let info = try await store.put(new, NewImage(key: key)).info
        // A read of the old image that was still on its way fills the cache after the delete.
        store.cache.insert(oldImage.cacheKey, old)
        #expect(try await store.read(info) == new)
    }

    @Test func concurrentPutsOfOneClientKeyStoreOneImage() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let key = UUID().uuidString.lowercased()
        let outcomes = await withTaskGroup(of: String.self) { group in
            for i in 0..<8 {
                group.addTask {
                    do {
                        return try await store.put(Samples.mp4(1000 + i), NewImage(key: key)).info.checksum
                    } catch let error as ImageStoreError {
                        return "refused: \(error)"
                    } catch {
                        return "error: \(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        let stored = try await makeStore(folder).info(key)
        // Every put either returned the one stored image or was told to retry (ABORTED).
        for outcome in outcomes {
            #expect(outcome == stored.checksum || outcome.hasPrefix("refused: another put of key"), "\(outcome)")
        }
        #expect(SHA256.checksum(try await makeStore(folder).read(stored)) == stored.checksum)
    }

    @Test func groupCommitIsolatesARowThatFails() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let existing = try await store.put(Samples.mp4(100), NewImage()).info
        var fresh = existing
        fresh.key = UUID().uuidString.lowercased()
        // A duplicate key (which claims normally prevent) and a good row, committed together.
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for row in [existing, fresh, existing] {
                group.addTask { (try? await store.insert(row, contentCheck: "")) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        #expect(try await store.list().images.map(\.key).sorted() == [existing.key, fresh.key].sorted())
    }

    @Test func manyConcurrentPutsShareCommitsAndAllLand() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let keys = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<60 { group.addTask { try await store.put(Samples.mp4(200 + i), NewImage(ownerKey: "o")).info.key } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(keys.count == 60)
        let reopened = try makeStore(folder)
        #expect(Set(try await reopened.list(ownerKey: "o", pageSize: 100).images.map(\.key)) == keys)
    }

    @Test func clientKeyMakesPutsIdempotent() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let key = UUID().uuidString
        let first = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "o", key: key))
        let second = try await store.put(Samples.mp4(), NewImage(ownerKey: "other", key: key.lowercased()))
        #expect(first.created && !second.created)
        #expect(second.info == first.info && first.info.key == key.lowercased())
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

    @Test func listPagesInCreatedOrderWithFilters() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        var keys: [String] = []
        for i in 0..<7 {
            let data = i % 3 == 2 ? Samples.mp4(100 + i) : try Samples.jpeg(width: 8 + i, height: 8)
            keys.append(try await store.put(data, NewImage(ownerKey: i % 2 == 0 ? "even" : "odd")).info.key)
        }
        var seen: [String] = []
        var token = ""
        repeat {
            let page = try await store.list(pageSize: 3, pageToken: token)
            #expect(page.images.count <= 3)
            seen += page.images.map(\.key)
            token = page.next
        } while !token.isEmpty
        #expect(seen == keys)
        #expect(try await store.list(ownerKey: "even").images.map(\.key) == [keys[0], keys[2], keys[4], keys[6]])
        #expect(try await store.list(mediaType: .movie).images.map(\.key) == [keys[2], keys[5]])
        #expect(try await store.list(ownerKey: "odd", mediaType: .image).images.map(\.key) == [keys[1], keys[3]])
        #expect(try await store.list(kind: .thumbnail).images.isEmpty)
        #expect(await storeError { try await store.list(pageToken: "abc") } == .invalid("page_token \"abc\" is not one this service issued"))
        #expect(await storeError { try await store.list(pageSize: -1) } == .invalid("page_size must be 0…1000 (got -1); 0 means 100"))
        #expect(await storeError { try await store.list(pageSize: 1001) } == .invalid("page_size must be 0…1000 (got 1001); 0 means 100"))
    }

    @Test func deletesCascadeToDerivedImagesAndOwnerDeleteIsIdempotent() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let original = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "item")).info
        let thumb = try await store.put(try Samples.jpeg(width: 8, height: 6), NewImage(kind: .thumbnail, parentKey: original.key)).info
        // Two levels down: a thumbnail of an edited image goes with the original too.
        let edited = try await store.put(try Samples.jpeg(width: 20, height: 20), NewImage(kind: .edited, parentKey: original.key)).info
        let editedThumb = try await store.put(
            try Samples.jpeg(width: 8, height: 8), NewImage(kind: .thumbnail, parentKey: edited.key)).info
        let other = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "item")).info
        let keep = try await store.put(try Samples.jpeg(), NewImage(ownerKey: "someone-else")).info

        let removed = try await store.delete(original.key)
        #expect(Set(removed.map(\.key)) == [original.key, thumb.key, edited.key, editedThumb.key])
        #expect(!FileManager.default.fileExists(atPath: store.blobs.path(of: thumb.key)))
        #expect(!FileManager.default.fileExists(atPath: store.blobs.path(of: editedThumb.key)))
        #expect(try await store.deleteForOwner("item").map(\.key) == [other.key])
        #expect(try await store.deleteForOwner("item").isEmpty)
        #expect(try await store.list().images.map(\.key) == [keep.key])
        #expect(store.blobs.allKeys() == [keep.key])
    }

    @Test func concurrentPutsAndGetsAllRoundTrip() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, budget: 256 << 10)
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<24 {
                group.addTask {
                    let data = Samples.mp4(5_000 + i * 997)
                    let info = try await store.put(data, NewImage(ownerKey: "o\(i % 3)")).info
                    for _ in 0..<3 where try await store.read(info) != data { return false }
                    return try await store.read(info, offset: 100, length: 50) == Array(data[100..<150])
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 24 && results.allSatisfy { $0 })
        #expect(try await store.list(pageSize: 100).images.count == 24)
    }
}
