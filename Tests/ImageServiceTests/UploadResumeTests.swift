import Digest
import Foundation
import Proto
import Runtime
import Testing
@testable import ImageService

/// Chunked uploads survive a restart: their rows in images.db, their bytes in `uploads/`.
@Suite struct UploadResumeTests {
    /// Over the direct-I/O threshold, with a received count off the block edge, so the tail
    /// read back at start and the digests read through again are both exercised.
    @Test func uploadResumedAfterARestartCommitsWithTheFilesChecksum() async throws {
        let folder = try TemporaryFolder()
        let data = Samples.mp4(3_000_017)
        let checksum = SHA256.checksum(data)
        let first = try makeStore(folder)
        let ticket = try await first.beginUpload(NewImage(ownerKey: "item", mediaType: .movie), totalSize: Int64(data.count), checksum: checksum)
        #expect(ticket.receivedBytes == 0)
        _ = try await first.appendUpload(ticket.uploadID, offset: 0, data: Array(data[0..<1_000_003]))
        #expect(try await first.appendUpload(ticket.uploadID, offset: 1_000_003, data: Array(data[1_000_003..<1_500_001])) == 1_500_001)
        first.close()

        let second = try makeStore(folder)
        #expect(second.openUploads == 1)
        let resumed = try await second.resumeUpload(ticket.uploadID)
        #expect(resumed.uploadID == ticket.uploadID && resumed.receivedBytes == 1_500_001)
        #expect(resumed.maxChunkBytes == ticket.maxChunkBytes)
        #expect(await storeError { try await second.appendUpload(ticket.uploadID, offset: 0, data: [1]) }
            == .failedPrecondition("offset 0 does not match the 1500001 bytes received so far; append at offset 1500001"))
        _ = try await second.appendUpload(ticket.uploadID, offset: 1_500_001, data: Array(data[1_500_001...]))
        let info = try await second.commitUpload(ticket.uploadID, checksum: "")
        #expect(info.checksum == checksum && info.sizeBytes == Int64(data.count))
        _ = second.cache.purge(.critical, reason: "manual")
        #expect(SHA256.checksum(try await second.read(info)) == checksum)
        #expect(try FileManager.default.contentsOfDirectory(atPath: second.blobs.uploadsFolder).isEmpty)
        second.close()
        let third = try makeStore(folder)
        #expect(third.openUploads == 0)
        #expect(await storeError { try await third.resumeUpload(ticket.uploadID) }
            == .notFound("upload_id \"\(ticket.uploadID)\": no such upload (committed, aborted or expired)"))
    }

    /// A chunk written but never acknowledged (here: bytes added while the service is down)
    /// is cut at start, so the client's retry at the acknowledged offset makes the right file.
    @Test func stagingFileLongerThanItsReceivedBytesIsCutAtStart() async throws {
        let folder = try TemporaryFolder()
        let data = Samples.mp4(20_000)
        let first = try makeStore(folder)
        let id = try await first.beginUpload(NewImage(), totalSize: Int64(data.count), checksum: SHA256.checksum(data)).uploadID
        _ = try await first.appendUpload(id, offset: 0, data: Array(data[0..<5000]))
        let path = first.blobs.uploadPath(id)
        first.close()
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0xEE, count: 3000))
        try handle.close()
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 8000)

        let second = try makeStore(folder)
        #expect(second.recovery.truncatedUploads == 1)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 5000)
        #expect(try await second.resumeUpload(id).receivedBytes == 5000)
        _ = try await second.appendUpload(id, offset: 5000, data: Array(data[5000...]))
        let info = try await second.commitUpload(id, checksum: "")
        #expect(try await second.read(info) == data)
    }

    @Test func resumeOfAnUnknownIdIsNotFoundAndAnExpiredUploadIsGoneAfterARestart() async throws {
        let folder = try TemporaryFolder()
        let clock = ManualClock(milliseconds: 1_000_000)
        let limits = ImageStoreLimits(uploadExpiryMilliseconds: 60_000)
        let first = try makeStore(folder, limits: limits, clock: clock)
        #expect(await storeError { try await first.resumeUpload("nope") }
            == .notFound("upload_id \"nope\": no such upload (committed, aborted or expired)"))
        let idle = try await first.beginUpload(NewImage(), totalSize: 100, checksum: "").uploadID
        _ = try await first.appendUpload(idle, offset: 0, data: [UInt8](repeating: 1, count: 10))
        let kept = try await first.beginUpload(NewImage(), totalSize: 100, checksum: "").uploadID
        first.close()

        clock.advance(by: 30_000)
        let second = try makeStore(folder, limits: limits, clock: clock)
        #expect(try await second.resumeUpload(kept).receivedBytes == 0)  // its expiry is now 150_000 ms on
        second.close()

        clock.advance(by: 31_000)  // `idle` was last used 61 s ago
        let third = try makeStore(folder, limits: limits, clock: clock)
        #expect(third.recovery.droppedUploads == 1)
        #expect(await storeError { try await third.resumeUpload(idle) }
            == .notFound("upload_id \"\(idle)\": no such upload (committed, aborted or expired)"))
        #expect(!FileManager.default.fileExists(atPath: third.blobs.uploadPath(idle)))
        #expect(FileManager.default.fileExists(atPath: third.blobs.uploadPath(kept)))
        // Expiry while running removes the row too: the next start has nothing of it.
        clock.advance(by: 60_000)
        #expect(third.expireUploads() == 1)
        // The row's removal is queued to the writer, which runs what is queued before it closes.
        third.close()
        let fourth = try makeStore(folder, limits: limits, clock: clock)
        #expect(fourth.openUploads == 0 && fourth.recovery.droppedUploads == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fourth.blobs.uploadsFolder).isEmpty)
    }

    /// A staging file without a row (a BeginUpload that crashed before it answered) is removed
    /// at start, and a row whose file is gone is dropped.
    @Test func strayStagingFilesAndRowsWithoutAFileAreDroppedAtStart() async throws {
        let folder = try TemporaryFolder()
        let first = try makeStore(folder)
        let id = try await first.beginUpload(NewImage(), totalSize: 100, checksum: "").uploadID
        first.close()
        unlink(first.blobs.uploadPath(id))
        let stray = first.blobs.uploadPath(UUID().uuidString.lowercased())
        #expect(FileManager.default.createFile(atPath: stray, contents: Data([1, 2, 3])))
        let second = try makeStore(folder)
        #expect(second.openUploads == 0 && second.recovery.droppedUploads == 1)
        #expect(!FileManager.default.fileExists(atPath: stray))
    }
}
