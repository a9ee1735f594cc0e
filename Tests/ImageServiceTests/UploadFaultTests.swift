import Foundation
import Testing
@testable import ImageService
#if canImport(Glibc)
import Glibc
#endif

/// A staged upload whose pages the kernel cannot supply when it is validated (the file cut
/// short under the map, or a media error) is refused DATA_LOSS and discarded, and the process
/// lives: a read through the map raised SIGBUS and killed image-service (issue 27, 15a).
/// Before the guard, each test here ended the test process with SIGBUS.
@Suite struct UploadFaultTests {
    @Test func aMapWhoseFileIsCutShortReadsZerosAndSaysWhere() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/mapped"
        let count = 5 * 4096
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0xAB, count: count)))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let map = try MappedFile(fd: fd, count: count, path: path)
        #expect(map.firstFault == nil)
        #expect(try map.readBack { $0[count - 1] } == 0xAB, "the whole file reads as written")

        #expect(truncate(path, 2 * 4096) == 0)
        var error: BlobIOError?
        do {
            _ = try map.readBack { bytes in bytes.reduce(0) { $0 &+ Int($1) } }
        } catch let caught as BlobIOError {
            error = caught
        }
        #expect(error?.code == EIO)
        #expect(map.firstFault == Int64(2 * 4096), "the first page past the new end")
        #expect(error?.description.contains("a page at byte 8192 of 20480 could not be read") == true, "\(String(describing: error))")
    }

    @Test func anUploadCutShortBeforeItIsValidatedIsDataLossAndDiscarded() async throws {
        let folder = try TemporaryFolder()
        let hooks = StoreHooks()
        let store = try makeStore(folder, hooks: hooks)
        let data = try Samples.jpeg(width: 1600, height: 1200)
        try #require(data.count > 16 * 4096, "a JPEG of several pages (\(data.count) bytes)")
        hooks.set {
            $0.uploadStaged = { path in
                // Keeps the header, loses the scans' pages.
                if truncate(path, 8192) != 0 { Issue.record("truncate \(path): errno \(errno)") }
            }
        }
        let key = UUID().uuidString.lowercased()
        let id = try await store.beginUpload(NewImage(key: key), totalSize: Int64(data.count), checksum: "").uploadID
        _ = try await store.appendUpload(id, offset: 0, data: data)
        let error = await storeError { try await store.commitUpload(id, checksum: "") }
        guard case .damaged(let message) = error else {
            Issue.record("expected DATA_LOSS, got \(String(describing: error))"); return
        }
        #expect(message.contains("upload \(id): its staged bytes could not be read back"), "\(message)")
        #expect(message.contains("a page at byte 8192 of \(data.count) could not be read"), "\(message)")
        #expect(message.hasSuffix("upload the file again"), "\(message)")

        // Nothing half stored, and the store goes on: the same upload again is stored.
        #expect(try await store.list().images.isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.blobs.uploadsFolder)).isEmpty)
        #expect(store.openUploads == 0)
        hooks.set { $0.uploadStaged = nil }
        let again = try await store.beginUpload(NewImage(key: key), totalSize: Int64(data.count), checksum: "").uploadID
        _ = try await store.appendUpload(again, offset: 0, data: data)
        let info = try await store.commitUpload(again, checksum: "")
        #expect(info.width == 1600 && info.height == 1200)
    }
}
