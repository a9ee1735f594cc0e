import Digest
import Foundation
@testable import JPEG
import Proto
import RPC
import RPCTestSupport
import Testing
import TestSupport
@testable import ThumbnailWorker

/// HEIC originals end to end, through the image-service and thumbnail-worker executables:
/// made at test time by heif-enc from the repository's orientation photos, with irot/imir
/// boxes that turn each of the eight stored layouts upright (their EXIF Orientation, which
/// must be ignored, still in them); stored untouched, rendered and thumbnailed upright as
/// JPEGs (checked by pixels); hostile HEICs refused with what was wrong.
@Suite struct HEICOriginalTests {
    static let patient = CallOptions(timeoutMilliseconds: 60_000)

    /// The image service and a thumbnail worker, thumbnails at 48 and 96, and a client; `stop`
    /// ends both.
    static func launch(_ folder: String) throws -> (client: RPCClient, stop: () -> Void) {
        let rpc = "ipc://\(folder)/images.sock", health = "ipc://\(folder)/worker.sock"
        let service = try ExecutableTests.launch(
            "image-service",
            ["--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data", "--thumbnail-sizes", "48,96"],
            endpoint: rpc)
        let worker = try ExecutableTests.launch(
            "thumbnail-worker", ["--rpc", health, "--image-service", rpc, "--concurrency", "2"], endpoint: health)
        let client = try RPCClient(context: ExecutableTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        return (client, {
            client.close()
            for process in [worker.process, service.process] where process.isRunning { process.terminate() }
        })
    }

    /// Landscape_n.jpg as a HEIC with the irot/imir of EXIF orientation n.
    static func oriented(_ n: Int) throws -> [UInt8] {
        try TestHEICs.oriented(
            TestHEICs.encode(jpegFile: Fixtures.orientationFolder.appendingPathComponent("Landscape_\(n).jpg")), TestHEICs.transforms(forEXIF: n))
    }

    /// The upright scene at `width` × `height`.
    static func upright(_ width: Int, _ height: Int) throws -> RGBImage {
        try JPEG.decode(Fixtures.orientationPhoto("Landscape_1.jpg")).resized(width: width, height: height)
    }

    /// Mean absolute difference per byte of two images of one size.
    static func difference(_ a: RGBImage, _ b: RGBImage) -> Double {
        precondition(a.width == b.width && a.height == b.height)
        var total = 0
        for i in a.pixels.indices { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
        return Double(total) / Double(a.pixels.count)
    }

    /// Whether `image` is the upright scene: close to it, and much farther from it mirrored or turned over.
    static func isUpright(_ image: RGBImage) throws -> (Bool, String) {
        let small = image.resized(width: 48, height: 32)
        let reference = try upright(48, 32)
        let near = difference(small, reference)
        let others = [2, 3, 4].map { difference(small, reference.oriented($0)) }
        return (near < 10 && others.allSatisfy { $0 > 3 * max(near, 2) }, "upright \(near), mirrored/turned \(others)")
    }

    @Test func heicOriginalsOfEveryOrientationAreStoredUntouchedAndRenderedAndThumbnailedUpright() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, stop) = try Self.launch(folder)
        defer { stop() }
        var stored: [(n: Int, info: ImageInfo)] = []
        for n in 1...8 {
            let heic = try Self.oriented(n)
            var put = PutImageRequest()
            put.data = heic
            put.ownerKey = "item-heic"
            let info = try await client.call(ImageServiceRPC.putImage, put, options: Self.patient)
            #expect(info.contentType == "image/heic" && info.mediaType == .image && info.width == 1800 && info.height == 1200, "\(n): \(info)")
            #expect(info.checksum == SHA256.checksum(heic) && info.sizeBytes == Int64(heic.count), "\(n)")
            var get = GetImageRequest()
            get.key = info.key
            #expect(try await client.call(ImageServiceRPC.getImage, get, options: Self.patient).data == heic, "\(n): stored untouched")
            stored.append((n, info))

            var rendition = GetRenditionRequest()
            rendition.key = info.key
            rendition.width = 300
            rendition.height = 300
            let made = try await client.call(ImageServiceRPC.getRendition, rendition, options: Self.patient)
            #expect(made.info?.contentType == "image/jpeg" && made.info?.width == 300 && made.info?.height == 200, "\(n): \(String(describing: made.info))")
            #expect(made.source?.key == info.key)
            let (upright, figures) = try Self.isUpright(try JPEG.decode(made.data))
            #expect(upright, "rendition of orientation \(n): \(figures)")
            #expect(EXIF.orientation(in: made.data) == nil, "\(n): EXIF in the rendition")
        }

        // The worker's thumbnails: both sizes of each, upright JPEGs.
        let end = ContinuousClock.now + .seconds(120)
        var list = ListImagesRequest()
        list.kind = .thumbnail
        list.pageSize = 100
        var thumbnails: [ImageInfo] = []
        while thumbnails.count < 16 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            thumbnails = try await client.call(ImageServiceRPC.listImages, list, options: Self.patient).images
        }
        #expect(thumbnails.count == 16)
        for (n, info) in stored {
            let mine = thumbnails.filter { $0.parentKey == info.key }
            #expect(mine.map { [$0.width, $0.height] }.sorted { $0[0] < $1[0] } == [[48, 32], [96, 64]], "\(n)")
            for thumbnail in mine where thumbnail.width == 96 {
                var get = GetImageRequest()
                get.key = thumbnail.key
                let data = try await client.call(ImageServiceRPC.getImage, get, options: Self.patient).data
                let (upright, figures) = try Self.isUpright(try JPEG.decode(data))
                #expect(upright, "thumbnail of orientation \(n): \(figures)")
            }
        }
    }

    @Test func theWorkerWeighsAHEICByItsDecodeAndFailsOneOverItsLimitNamingIt() throws {
        let heic = try TestHEICs.encode(jpegFile: Fixtures.pillowFolder.appendingPathComponent("hopper.jpg"))
        let made = try ThumbnailWorkerHost.makeThumbnails(heic, [32], with: Thumbnailer())
        #expect(made.map { [$0.size, $0.width, $0.height] } == [[32, 32, 32]])
        #expect(ThumbnailWorkerHost.workingBytes(heic, [32, 64]) == 128 * 128 * 8 + 64 * 64 * 11)
        var refusal = ""
        do {
            _ = try ThumbnailWorkerHost.makeThumbnails(heic, [32], with: Thumbnailer(options: DecodeOptions(maxDecodedBytes: 1000)))
        } catch {
            refusal = "\(error)"
        }
        #expect(refusal == "HEIC is over the decoded-bytes limit: its primary image declares 128×128, whose decode holds 131072 bytes (8 a pixel), over the limit of 1000 bytes")
    }

    @Test func hostileHEICsAreRefusedWithPreciseCodesAndTheServiceStillAnswers() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, stop) = try Self.launch(folder)
        defer { stop() }
        let good = try TestHEICs.encode(jpegFile: Fixtures.pillowFolder.appendingPathComponent("hopper.jpg"))
        let huge = try TestHEICs.claiming(good, width: 100_000, height: 100_000)
        // 9000 × 9000 = 81 megapixels, under the pixel limit; its decode holds 648 MB.
        let large = try TestHEICs.claiming(good, width: 9000, height: 9000)
        var garbage = Array(good.prefix(Int(good[3])))
        var generator = SplitMix64(seed: 7)
        garbage += (0..<4000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        // Found or made for ops/fuzz heic (Fuzz/corpus/heic): hvcC's SPS coding 16384×16384 under
        // an ispe of 128×128; a grid whose tile is an overlay; a grid of 64759×65527 hidden in
        // a second meta box; a grid whose canvas is read past its idat (19561×27759).
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus/heic")
        func found(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: corpus.appendingPathComponent(name))) }
        let cases: [(String, [UInt8], String)] = [
            ("huge", huge, "data: HEIC of 100000×100000 = 10000000000 pixels is over the limit of 100000000 pixels (--max-pixels)"),
            ("picture past its ispe", try found("heifenc-hopper-sps-16384.heic"),
             "data: HEIC is damaged or unsupported (its image item 1 declares 128×128 (ispe) but its HEVC data codes a picture of 16384×16384)"),
            ("overlay as a tile", try found("regressions/oom-83b6e69a24e0e4d97a23b92ddada0f48d0a72b6d"),
             "data: HEIC is damaged or unsupported (it has a grid image that takes another derived image (iovl) as input"),
            ("two metas", try found("regressions/oom-884af68f2a45206361f869a9c40b7746548b0772"),
             "data: HEIC is damaged or unsupported (it has more than one meta box"),
            ("canvas past its idat", try found("regressions/oom-d8b2c3676183d8feff6c6c4230bdcc050f118a1e"),
             "data: HEIC of 19561×27759 = 542993799 pixels is over the limit of 100000000 pixels (--max-pixels) (a grid or overlay in it declares a canvas of 19561×27759 (its primary image's ispe says 8×8))"),
            ("large", large, "data: HEIC of 9000×9000 needs 648000000 bytes to decode (8 a pixel), over the limit of 268435456 bytes (--max-decoded-bytes)"),
            ("truncated", Array(good.prefix(good.count - 300)), "data: HEIC is "),
            ("garbage", garbage, "data: HEIC is damaged or unsupported ("),
        ]
        for (name, data, message) in cases {
            var put = PutImageRequest()
            put.data = data
            let refused = await rpcError { try await client.call(ImageServiceRPC.putImage, put, options: Self.patient) }
            #expect(refused?.code == .invalidArgument, "\(name): \(String(describing: refused))")
            #expect(refused?.message.hasPrefix(message) == true, "\(name): \(refused?.message ?? "")")
        }
        var list = ListImagesRequest()
        list.pageSize = 100
        #expect(try await client.call(ImageServiceRPC.listImages, list, options: Self.patient).images.isEmpty)
        // Uploaded in chunks, a good one is validated whole and stored; the service still answers.
        var begin = BeginUploadRequest()
        begin.totalSize = Int64(good.count)
        let ticket = try await client.call(ImageServiceRPC.beginUpload, begin, options: Self.patient)
        var append = AppendUploadRequest()
        append.uploadId = ticket.uploadId
        append.data = good
        _ = try await client.call(ImageServiceRPC.appendUpload, append, options: Self.patient)
        var commit = CommitUploadRequest()
        commit.uploadId = ticket.uploadId
        let info = try await client.call(ImageServiceRPC.commitUpload, commit, options: Self.patient)
        #expect(info.contentType == "image/heic" && info.width == 128 && info.checksum == SHA256.checksum(good))
    }
}
