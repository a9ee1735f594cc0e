import Capture
import Digest
import Foundation
import Harness
import JPEG
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport

/// A running suite (image-service, item-service, capture-worker) with a photo library in a
/// temporary folder and a camera that runs `camera.sh` there (rewritten by the tests).
final class CaptureSuite: @unchecked Sendable {
    let harness: Harness
    let items: RPCClient
    let images: RPCClient
    let library: String
    let cameraScript: String
    let item: String

    /// A suite whose capture worker starts with it unless `startWorker` is false (then
    /// `harness.start(.captureWorker)` starts it: jobs wait for it in the queue).
    init(cameraTimeoutMilliseconds: Int = 30_000, albumWritable: Bool = false, startWorker: Bool = true) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hp-capture-\(UUID().uuidString.prefix(8))").path
        library = root + "/library"
        cameraScript = root + "/camera.sh"
        try FileManager.default.createDirectory(atPath: library + "/" + CaptureSources.recentFolder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: library + "/trip", withIntermediateDirectories: true)
        try Data(try Fixtures.orientationPhoto("Landscape_1.jpg")).write(to: URL(fileURLWithPath: library + "/trip/lamp.jpg"))
        try "cat '\(Fixtures.orientationFolder.path)/Portrait_1.jpg'\n".write(toFile: cameraScript, atomically: true, encoding: .utf8)
        let sources = CaptureSources(
            libraryDirectory: library, cameraCommand: "sh '\(cameraScript)'", cameraTimeoutMilliseconds: cameraTimeoutMilliseconds,
            albumWritable: albumWritable)
        harness = try Harness(captureSources: sources)
        do {
            try harness.start(.imageService)
            try harness.start(.itemService)
            if startWorker { try harness.start(.captureWorker) }
            items = try harness.client(.itemService)
            images = try harness.client(.imageService)
            var create = CreateItemRequest()
            create.name = "Lamp"
            item = try await items.call(ItemServiceRPC.createItem, create, options: .init(timeoutMilliseconds: 30_000)).key
        } catch {
            harness.shutdown()
            throw error
        }
    }

    func stop() {
        items.close()
        images.close()
        harness.shutdown()
        try? FileManager.default.removeItem(atPath: (library as NSString).deletingLastPathComponent)
    }

    /// Captures and waits (60 s at most) for the job to be DONE or FAILED.
    func capture(_ configure: (inout CaptureRequest) -> Void) async throws -> CaptureJob {
        try await finished(try await enqueue(configure).jobId)
    }

    /// Captures, and answers the job as queued.
    func enqueue(_ configure: (inout CaptureRequest) -> Void) async throws -> CaptureJob {
        var request = CaptureRequest()
        request.itemKey = item
        configure(&request)
        return try #require(try await items.call(CaptureServiceRPC.capture, request, options: .init(timeoutMilliseconds: 30_000)).job)
    }

    /// The job once DONE or FAILED, waiting `seconds` at most.
    func finished(_ id: String, within seconds: Int64 = 60) async throws -> CaptureJob {
        var get = GetCaptureJobRequest()
        get.jobId = id
        let end = monotonicMilliseconds() + seconds * 1000
        while true {
            let job = try #require(try await items.call(CaptureServiceRPC.getCaptureJob, get).job)
            if job.state == .done || job.state == .dead { return job }
            guard monotonicMilliseconds() < end else {
                Issue.record("capture job \(id) still \(job.state.rawValue) after \(seconds) s")
                return job
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Capture must be refused before any job exists, with this code.
    func refused(_ configure: (inout CaptureRequest) -> Void) async -> RPCError? {
        var request = CaptureRequest()
        request.itemKey = item
        configure(&request)
        do {
            _ = try await items.call(CaptureServiceRPC.capture, request, options: .init(timeoutMilliseconds: 30_000, retry: .none))
            return nil
        } catch {
            return error
        }
    }

    func getItem() async throws -> Item {
        var get = GetItemRequest()
        get.key = item
        return try await items.call(ItemServiceRPC.getItem, get)
    }

    func info(_ key: String) async throws -> ImageInfo {
        var stat = StatImageRequest()
        stat.key = key
        return try await images.call(ImageServiceRPC.statImage, stat)
    }

    /// Every image the image service holds of `owner`, thumbnails aside.
    func imagesOf(_ owner: String) async throws -> [ImageInfo] {
        var list = ListImagesRequest()
        list.ownerKey = owner
        list.pageSize = 1000
        return try await images.call(ImageServiceRPC.listImages, list).images.filter { $0.kind != .thumbnail }
    }

    /// An image's bytes, read back in ranges of 8 MiB.
    func bytes(of key: String) async throws -> [UInt8] {
        let size = try await info(key).sizeBytes
        var bytes: [UInt8] = []
        while Int64(bytes.count) < size {
            var get = GetImageRequest()
            get.key = key
            get.offset = Int64(bytes.count)
            get.length = min(8 << 20, size - Int64(bytes.count))
            let part = try await images.call(ImageServiceRPC.getImage, get, options: .init(timeoutMilliseconds: 30_000)).data
            guard !part.isEmpty else { break }
            bytes += part
        }
        return bytes
    }

    /// Stores `data` with a chunked upload (BeginUpload, AppendUpload, CommitUpload).
    func upload(_ data: [UInt8], key: String = "", owner: String, mediaType: MediaType = .unspecified) async throws -> ImageInfo {
        var begin = BeginUploadRequest()
        begin.key = key
        begin.ownerKey = owner
        begin.totalSize = Int64(data.count)
        begin.checksum = SHA256.checksum(data)
        begin.mediaType = mediaType
        let upload = try await images.call(ImageServiceRPC.beginUpload, begin)
        var offset = 0
        while offset < data.count {
            var append = AppendUploadRequest()
            append.uploadId = upload.uploadId
            append.offset = Int64(offset)
            append.data = Array(data[offset..<min(data.count, offset + Int(upload.maxChunkBytes))])
            _ = try await images.call(ImageServiceRPC.appendUpload, append, options: .init(timeoutMilliseconds: 60_000))
            offset += append.data.count
        }
        var commit = CommitUploadRequest()
        commit.uploadId = upload.uploadId
        return try await images.call(ImageServiceRPC.commitUpload, commit, options: .init(timeoutMilliseconds: 120_000))
    }

    func setCamera(_ script: String) throws {
        try script.write(toFile: cameraScript, atomically: true, encoding: .utf8)
    }
}

/// Photos and images the capture tests make.
enum CaptureSamples {
    /// The mean absolute difference per sample of two images of one size.
    static func meanDifference(_ a: RGBImage, _ b: RGBImage) -> Double {
        guard a.width == b.width, a.height == b.height else { return .infinity }
        var total = 0
        for index in a.pixels.indices { total += abs(Int(a.pixels[index]) - Int(b.pixels[index])) }
        return Double(total) / Double(a.pixels.count)
    }

    /// An MP4 by its signature ("ftyp" at 4), then noise from `seed`: `count` bytes in all.
    static func movie(count: Int, seed: UInt64) -> [UInt8] {
        var movie = [UInt8](repeating: 0, count: count)
        var generator = SplitMix64(seed: seed)
        for index in stride(from: 0, to: count - 7, by: 8) {
            withUnsafeBytes(of: generator.next()) { movie.replaceSubrange(index..<(index + 8), with: $0) }
        }
        movie.replaceSubrange(0..<12, with: [0, 0, 0, 0x18] + Array("ftypisom".utf8))
        return movie
    }

    /// A distinct 8×8 JPEG for each `seed`.
    static func tinyJPEG(_ seed: Int) -> [UInt8] {
        let pixels = (0..<(8 * 8 * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed &* 13) }
        return try! JPEG.encode(RGBImage(width: 8, height: 8, pixels: pixels), quality: 90)
    }

    /// `jpeg` with its frame header claiming `width` × `height`.
    static func claiming(width: Int, height: Int, _ jpeg: [UInt8]) -> [UInt8] {
        var bytes = jpeg
        for index in 0..<(bytes.count - 9) where bytes[index] == 0xFF && [0xC0, 0xC1, 0xC2].contains(bytes[index + 1]) {
            bytes[index + 5] = UInt8(height >> 8)
            bytes[index + 6] = UInt8(height & 0xFF)
            bytes[index + 7] = UInt8(width >> 8)
            bytes[index + 8] = UInt8(width & 0xFF)
            break
        }
        return bytes
    }

    /// `jpeg` with an APP1 Exif segment right after its SOI whose Exif IFD holds only a
    /// DateTimeOriginal of `date` (little-endian TIFF).
    static func withDateTimeOriginal(_ date: String, _ jpeg: [UInt8]) -> [UInt8] {
        func u16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        func u32(_ value: Int) -> [UInt8] { u16(value & 0xFFFF) + u16(value >> 16) }
        // TIFF header (8), IFD0 at 8: one entry (ExifIFD → 26), next 0; Exif IFD at 26: one
        // entry (DateTimeOriginal, ASCII, 20 at 44), next 0; the text at 44.
        var tiff: [UInt8] = Array("II".utf8) + u16(42) + u32(8)
        tiff += u16(1) + u16(0x8769) + u16(4) + u32(1) + u32(26) + u32(0)
        tiff += u16(1) + u16(0x9003) + u16(2) + u32(20) + u32(44) + u32(0)
        tiff += Array(date.utf8) + [0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let segment: [UInt8] = [0xFF, 0xE1] + [UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        return Array(jpeg.prefix(2)) + segment + Array(jpeg.dropFirst(2))
    }
}

/// Waits (30 s at most) until `list` is empty.
func eventuallyEmpty(_ list: () async throws -> [ImageInfo]) async throws {
    let end = monotonicMilliseconds() + 30_000
    var last: [ImageInfo] = []
    while monotonicMilliseconds() < end {
        last = try await list()
        if last.isEmpty { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("still there after 30 s: \(last.map(\.key))")
}
