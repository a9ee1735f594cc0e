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
        #expect(await refused(Array("hello, world".utf8)).hasPrefix("data is not a JPEG or PNG image, a PDF document or a known movie container (first bytes: 68 65 6c"))
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
