import Digest
import Foundation
import Proto
import Runtime
import Testing
@testable import ImageService

@Suite struct UploadTests {
    @Test func chunkedUploadCommitsWithVerifiedSizeAndChecksum() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let data = Samples.mp4(300_000)
        let checksum = SHA256.checksum(data)
        let ticket = try await store.beginUpload(NewImage(ownerKey: "item", mediaType: .movie), totalSize: Int64(data.count), checksum: checksum)
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + 65_536)
            let received = try await store.appendUpload(ticket.uploadID, offset: Int64(offset), data: Array(data[offset..<end]))
            #expect(received == Int64(end))
            offset = end
        }
        let info = try await store.commitUpload(ticket.uploadID, checksum: checksum)
        #expect(info.checksum == checksum && info.sizeBytes == Int64(data.count) && info.mediaType == .movie)
        #expect(try await makeStore(folder).read(info) == data)
        #expect(store.openUploads == 0)
        #expect(await storeError { try await store.appendUpload(ticket.uploadID, offset: 0, data: [1]) }
            == .notFound("upload_id \"\(ticket.uploadID)\": no such upload (committed, aborted or expired)"))
    }

    /// Large uploads are staged with direct I/O in whole blocks; chunks of any size must
    /// still come back byte for byte (the part of a block not yet whole waits in memory).
    @Test func oddChunkSizesAroundTheBlockEdgesStageExactly() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        var sizes = [1, 4095, 4097, 100_003, (1 << 20) + 7, 8192, 3, 4096, 2_000_001]
        let data = Samples.mp4(sizes.reduce(0, +) + 13)
        sizes.append(data.count - sizes.reduce(0, +))  // the rest (13 and the container header)
        let ticket = try await store.beginUpload(NewImage(), totalSize: Int64(data.count), checksum: "")
        var offset = 0
        for size in sizes {
            let received = try await store.appendUpload(ticket.uploadID, offset: Int64(offset), data: Array(data[offset..<offset + size]))
            offset += size
            #expect(received == Int64(offset))
        }
        // A retry of the last chunk at a stale offset is refused and changes nothing.
        #expect(await storeError { try await store.appendUpload(ticket.uploadID, offset: 0, data: [9]) } != nil)
        let info = try await store.commitUpload(ticket.uploadID, checksum: SHA256.checksum(data))
        #expect(info.sizeBytes == Int64(data.count))
        _ = store.cache.purge(.critical, reason: "manual")
        #expect(try await store.read(info) == data)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder).isEmpty)
    }

    @Test func chunksOutOfOrderOrPastTheDeclaredSizeAreRefused() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let data = try Samples.jpeg(width: 200, height: 100)
        let id = try await store.beginUpload(NewImage(), totalSize: Int64(data.count), checksum: "").uploadID
        _ = try await store.appendUpload(id, offset: 0, data: Array(data[0..<100]))
        #expect(await storeError { try await store.appendUpload(id, offset: 150, data: Array(data[150..<200])) }
            == .failedPrecondition("offset 150 does not match the 100 bytes received so far; append at offset 100"))
        #expect(await storeError { try await store.appendUpload(id, offset: 0, data: Array(data[0..<100])) }
            == .failedPrecondition("offset 0 does not match the 100 bytes received so far; append at offset 100"))
        #expect(await storeError { try await store.appendUpload(id, offset: 100, data: Array(data[100...]) + [0]) }
            == .outOfRange("offset 100 + \(data.count - 99) bytes = \(data.count + 1) is past the declared total_size \(data.count)"))
        #expect(await storeError { try await store.appendUpload(id, offset: 100, data: []) } == .invalid("data is empty"))
        #expect(await storeError { try await store.appendUpload(id, offset: -1, data: [1]) } == .invalid("offset must be ≥ 0 (got -1)"))
        #expect(await storeError { try await store.commitUpload(id, checksum: "") }
            == .failedPrecondition("received 100 of the declared total_size \(data.count) bytes; append the rest before committing"))
        _ = try await store.appendUpload(id, offset: 100, data: Array(data[100...]))
        let info = try await store.commitUpload(id, checksum: "")
        #expect(info.contentType == "image/jpeg" && info.width == 200 && info.height == 100)
    }

    @Test func checksumMismatchOrBadMediaAtCommitDiscardsTheUpload() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let data = Samples.mp4(1000)
        let wrong = "sha256:" + String(repeating: "0", count: 64)
        let id = try await store.beginUpload(NewImage(), totalSize: Int64(data.count), checksum: wrong).uploadID
        _ = try await store.appendUpload(id, offset: 0, data: data)
        let error = await storeError { try await store.commitUpload(id, checksum: "") }
        #expect(error == .invalid(
            "checksum \(wrong) given at begin does not match the received data (\(SHA256.checksum(data))); the upload is discarded"))

        let text = Array("not media at all".utf8)
        let id2 = try await store.beginUpload(NewImage(), totalSize: Int64(text.count), checksum: "").uploadID
        _ = try await store.appendUpload(id2, offset: 0, data: text)
        guard case .invalid(let message) = await storeError({ try await store.commitUpload(id2, checksum: "") }) else {
            Issue.record("expected INVALID_ARGUMENT"); return
        }
        #expect(message.hasPrefix("data is not a JPEG or PNG image") && message.hasSuffix("; the upload is discarded"))

        let id3 = try await store.beginUpload(NewImage(mediaType: .image), totalSize: Int64(data.count), checksum: "").uploadID
        _ = try await store.appendUpload(id3, offset: 0, data: data)
        #expect(await storeError { try await store.commitUpload(id3, checksum: "") }
            == .invalid("media_type IMAGE does not match the data, which is MOVIE (video/mp4); the upload is discarded"))

        #expect(try await store.list().images.isEmpty)
        #expect(store.blobs.allKeys().isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder)).isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.blobs.uploadsFolder)).isEmpty)
        #expect(store.openUploads == 0)
    }

    @Test func keyStoredDuringAnUploadIsNeverOverwritten() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let key = UUID().uuidString.lowercased()
        let data = Samples.mp4(5000)
        let id = try await store.beginUpload(NewImage(key: key), totalSize: Int64(data.count), checksum: "").uploadID
        _ = try await store.appendUpload(id, offset: 0, data: data)
        let first = try await store.put(try Samples.jpeg(), NewImage(key: key)).info
        #expect(await storeError { try await store.commitUpload(id, checksum: "") } == .alreadyExists(
            "key \(key): an image with this key was stored during the upload; the upload is discarded"))
        let fresh = try makeStore(folder)
        #expect(try await fresh.info(key) == first)
        #expect(SHA256.checksum(try await fresh.read(first)) == first.checksum)
    }

    @Test func beginRefusesBadDeclarations() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder, limits: ImageStoreLimits(maxUploadBytes: 1000))
        #expect(await storeError { try await store.beginUpload(NewImage(), totalSize: 0, checksum: "") }
            == .invalid("total_size must be > 0 (got 0)"))
        #expect(await storeError { try await store.beginUpload(NewImage(), totalSize: 1001, checksum: "") }
            == .tooLarge("total_size 1001 is over the upload limit of 1000 bytes"))
        #expect(await storeError { try await store.beginUpload(NewImage(), totalSize: 10, checksum: "md5:abc") }
            == .invalid("checksum \"md5:abc\" is not \"sha256:\" followed by 64 lower-case hex digits"))
        let existing = try await store.put(try Samples.jpeg(), NewImage()).info
        #expect(await storeError { try await store.beginUpload(NewImage(key: existing.key), totalSize: 10, checksum: "") }
            == .alreadyExists("key \(existing.key): an image with this key exists already"))
    }

    @Test func abandonedUploadsExpireAndAbortRemovesStagedBytes() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock(milliseconds: 1_000_000)
        let store = try makeStore(folder, limits: ImageStoreLimits(uploadExpiryMilliseconds: 60_000), clock: clock)
        let idle = try await store.beginUpload(NewImage(), totalSize: 100, checksum: "").uploadID
        _ = try await store.appendUpload(idle, offset: 0, data: [UInt8](repeating: 1, count: 10))
        let aborted = try await store.beginUpload(NewImage(), totalSize: 100, checksum: "").uploadID
        try await store.abortUpload(aborted)
        #expect(await storeError { try await store.abortUpload(aborted) }
            == .notFound("upload_id \(aborted): no such upload (committed, aborted or expired)"))
        clock.advance(by: 59_000)
        #expect(store.expireUploads() == 0)
        clock.advance(by: 2_000)
        #expect(store.expireUploads() == 1)
        #expect(await storeError { try await store.appendUpload(idle, offset: 10, data: [1]) }
            == .notFound("upload_id \"\(idle)\": no such upload (committed, aborted or expired)"))
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder)).isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.blobs.uploadsFolder)).isEmpty)
    }
}
