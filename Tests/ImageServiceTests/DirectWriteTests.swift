import Digest
import Foundation
import Testing
@testable import ImageService

/// Large blobs are written with direct I/O (around the page cache) where the file system allows.
@Suite struct DirectWriteTests {
    static func blob(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 12) } }

    /// Whether `path` is on ext4, which takes direct I/O (the longest mount point over it in /proc/self/mounts).
    static func onExt4(_ path: String) -> Bool {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var best: (point: String, type: String) = ("", "")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = String(fields[1]), type = String(fields[2])
            let covers = point == "/" || resolved == point || resolved.hasPrefix(point + "/")
            if covers, point.count >= best.point.count { best = (point, type) }
        }
        return best.type == "ext4"
    }

    @Test func sizesAroundTheBlockAndChunkEdgesReadBackWhole() throws {
        let folder = try TemporaryFolder()
        let blobs = try BlobStore(root: folder.path + "/images")
        let sizes = [
            BlobStore.directWriteThreshold, BlobStore.directWriteThreshold + 1, (4 << 20) - 1, 4 << 20,
            (4 << 20) + 4095, (9 << 20) + 7,
        ]
        for (index, size) in sizes.enumerated() {
            let bytes = Self.blob(size)
            let key = String(format: "00000000-0000-4000-8000-%012d", index)
            if let temporary = try blobs.writeTemporaryDirect(bytes, key: key) {
                #expect(try Data(contentsOf: URL(fileURLWithPath: temporary)) == Data(bytes), "size \(size)")
                unlink(temporary)
            } else {
                #expect(!Self.onExt4(blobs.temporaryFolder), "ext4 takes direct I/O, yet it was refused")
            }
            try blobs.write(bytes, key: key)
            let check = XXHash64.checksum(bytes)
            #expect(try blobs.read(key: key, size: Int64(size), checksum: check) == bytes, "size \(size)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: blobs.temporaryFolder).isEmpty)
    }

    /// /dev/shm is tmpfs: older kernels refuse O_DIRECT there, newer ones accept it. Either way
    /// the blob must arrive whole. Without /dev/shm the test is skipped, and says so.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "this machine has no /dev/shm (tmpfs) to try a file system without O_DIRECT on"))
    func aFileSystemWithoutDirectIOFallsBackToOrdinaryWrites() throws {
        let root = "/dev/shm/hp-direct-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let blobs = try BlobStore(root: root)
        let bytes = Self.blob((2 << 20) + 5)
        try blobs.write(bytes, key: "00000000-0000-4000-8000-000000000099")
        #expect(try blobs.read(key: "00000000-0000-4000-8000-000000000099", size: Int64(bytes.count), checksum: SHA256.checksum(bytes)) == bytes)
    }

    @Test func aFanOutFolderThatWentMissingIsMadeAgain() throws {
        let folder = try TemporaryFolder()
        let blobs = try BlobStore(root: folder.path + "/images")
        let key = "cd000000-0000-4000-8000-000000000002"
        try FileManager.default.removeItem(atPath: blobs.blobsFolder + "/cd")
        let bytes = Self.blob(1000)
        try blobs.write(bytes, key: key)
        #expect(try blobs.read(key: key, size: Int64(bytes.count), checksum: SHA256.checksum(bytes)) == bytes)
    }

    @Test func aFolderThatCannotBeMadeFailsTheWriteAndLeavesNothing() throws {
        let folder = try TemporaryFolder()
        let blobs = try BlobStore(root: folder.path + "/images")
        let key = "abcd0000-0000-4000-8000-000000000001"
        // A file where the blob's fan-out folder should be (made at open, then replaced).
        try FileManager.default.removeItem(atPath: blobs.blobsFolder + "/ab")
        #expect(FileManager.default.createFile(atPath: blobs.blobsFolder + "/ab", contents: Data([1])))
        for size in [10, BlobStore.directWriteThreshold + 10] {
            #expect(throws: (any Error).self) { try blobs.write(Self.blob(size), key: key) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: blobs.temporaryFolder).isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: blobs.path(of: key)))
    }
}

/// Blobs go one folder deep (`ab/<key>`), into folders made at open.
@Suite struct BlobLayoutTests {
    @Test func newBlobsGoOneFolderDeep() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        defer { store.close() }
        let movie: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 0, 0]
        let fresh = try await store.put(movie + [UInt8](repeating: 2, count: 100), NewImage()).info
        #expect(FileManager.default.fileExists(atPath: store.blobs.path(of: fresh.key)))
        #expect(store.blobs.path(of: fresh.key).hasSuffix("/blobs/\(fresh.key.prefix(2))/\(fresh.key)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.blobsFolder).count >= 256)
    }
}
