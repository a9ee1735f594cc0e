import Digest
import Foundation
@testable import JPEG
import Proto
import RPC
import RPCTestSupport
import Testing
import TestSupport
@testable import ThumbnailWorker

/// PNG originals end to end, through the image-service and thumbnail-worker executables, both
/// given `--png-background 3366cc`: stored untouched, rendered and thumbnailed as JPEGs with
/// their transparency on that colour; hostile PNGs refused with what was wrong.
@Suite struct PNGOriginalTests {
    static let patient = CallOptions(timeoutMilliseconds: 30_000)
    static let background: (r: Int, g: Int, b: Int) = (0x33, 0x66, 0xCC)

    /// The image service and a thumbnail worker, both compositing on 3366cc, thumbnails at 48
    /// and 96, and a client; `stop` ends both.
    static func launch(_ folder: String) throws -> (client: RPCClient, stop: () -> Void) {
        let rpc = "ipc://\(folder)/images.sock", health = "ipc://\(folder)/worker.sock"
        let service = try ExecutableTests.launch(
            "image-service",
            ["--rpc", rpc, "--events", "ipc://\(folder)/events.sock", "--data-dir", folder + "/data", "--png-background", "3366cc",
             "--thumbnail-sizes", "48,96"],
            endpoint: rpc)
        let worker = try ExecutableTests.launch(
            "thumbnail-worker", ["--rpc", health, "--image-service", rpc, "--concurrency", "2", "--png-background", "#3366CC"], endpoint: health)
        let client = try RPCClient(context: ExecutableTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 10_000))
        return (client, {
            client.close()
            for process in [worker.process, service.process] where process.isRunning { process.terminate() }
        })
    }

    /// A column's alpha: transparent, half and opaque quarters of 128 columns.
    static func alpha(_ x: Int, _ y: Int) -> UInt8 { x < 32 ? 0 : x < 64 ? 128 : 255 }

    /// Whether `pixel` is the background, within JPEG's error.
    static func isBackground(_ pixel: (r: UInt8, g: UInt8, b: UInt8)) -> Bool {
        abs(Int(pixel.r) - background.r) <= 8 && abs(Int(pixel.g) - background.g) <= 8 && abs(Int(pixel.b) - background.b) <= 8
    }

    /// The PNGs of the test, from the repository's hopper.jpg (128×128): RGBA at 8 bits with a
    /// transparent left quarter, RGBA at 16 bits likewise, and a palette with a transparent entry
    /// for the left quarter.
    static func originals() throws -> [(name: String, png: [UInt8])] {
        let hopper = try JPEG.decode(Fixtures.pillowImage("hopper.jpg"))
        var rgba: [UInt8] = [], rgba16: [UInt8] = [], indices: [UInt8] = []
        for y in 0..<128 {
            for x in 0..<128 {
                let p = hopper.pixel(x: x, y: y)
                rgba += [p.r, p.g, p.b, alpha(x, y)]
                for v in [p.r, p.g, p.b, alpha(x, y)] { rgba16 += [v, v ^ 0x5A] }
                // Entry 0 transparent; the rest a 4-level grey ramp of the photo's luma.
                indices.append(x < 32 ? 0 : 1 + UInt8((Int(p.r) + Int(p.g) + Int(p.b)) / 3 / 64))
            }
        }
        let greys: [(red: UInt8, green: UInt8, blue: UInt8)] = [(0, 0, 0), (30, 30, 30), (100, 100, 100), (170, 170, 170), (240, 240, 240)]
        return [
            ("rgba8", try PNG.encode(PNGPicture(width: 128, height: 128, bitDepth: 8, colorType: .rgba, samples: rgba))),
            ("rgba16", try PNG.encode(PNGPicture(width: 128, height: 128, bitDepth: 16, colorType: .rgba, interlaced: true, samples: rgba16))),
            ("palette", try PNG.encode(PNGPicture(width: 128, height: 128, bitDepth: 8, colorType: .palette, samples: indices, palette: greys, paletteAlpha: [0]))),
        ]
    }

    @Test func pngOriginalsAreStoredUntouchedRenderedAndThumbnailedOnTheConfiguredBackground() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, stop) = try Self.launch(folder)
        defer { stop() }
        var stored: [(name: String, info: ImageInfo)] = []
        for (name, png) in try Self.originals() {
            var put = PutImageRequest()
            put.data = png
            put.ownerKey = "item-png"
            put.contentType = "image/png"
            let info = try await client.call(ImageServiceRPC.putImage, put, options: Self.patient)
            #expect(info.contentType == "image/png" && info.mediaType == .image && info.width == 128 && info.height == 128, "\(name): \(info)")
            #expect(info.checksum == SHA256.checksum(png) && info.sizeBytes == Int64(png.count), "\(name)")
            var get = GetImageRequest()
            get.key = info.key
            #expect(try await client.call(ImageServiceRPC.getImage, get, options: Self.patient).data == png, "\(name): stored untouched")
            stored.append((name, info))

            var rendition = GetRenditionRequest()
            rendition.key = info.key
            rendition.width = 64
            rendition.height = 64
            let made = try await client.call(ImageServiceRPC.getRendition, rendition, options: Self.patient)
            #expect(made.info?.contentType == "image/jpeg" && made.info?.width == 64 && made.info?.height == 64, "\(name)")
            #expect(made.source?.key == info.key)
            let pixels = try JPEG.decode(made.data)
            #expect(Self.isBackground(pixels.pixel(x: 4, y: 32)), "\(name): \(pixels.pixel(x: 4, y: 32)) is not the background")
            #expect(!Self.isBackground(pixels.pixel(x: 50, y: 32)), "\(name): the opaque part is the photo")
            #expect(EXIF.orientation(in: made.data) == nil)
        }

        // The worker's thumbnails: both sizes of each, JPEGs on the same background.
        let end = ContinuousClock.now + .seconds(60)
        var list = ListImagesRequest()
        list.kind = .thumbnail
        list.pageSize = 100
        var thumbnails: [ImageInfo] = []
        while thumbnails.count < 6 && ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
            thumbnails = try await client.call(ImageServiceRPC.listImages, list, options: Self.patient).images
        }
        #expect(thumbnails.count == 6)
        for (name, info) in stored {
            let mine = thumbnails.filter { $0.parentKey == info.key }
            #expect(mine.map { [$0.width, $0.height] }.sorted { $0[0] < $1[0] } == [[48, 48], [96, 96]], "\(name)")
            for thumbnail in mine {
                #expect(thumbnail.contentType == "image/jpeg")
                var get = GetImageRequest()
                get.key = thumbnail.key
                let pixels = try JPEG.decode(try await client.call(ImageServiceRPC.getImage, get, options: Self.patient).data)
                let edge = pixels.width
                #expect(Self.isBackground(pixels.pixel(x: edge / 16, y: edge / 2)), "\(name) \(edge): \(pixels.pixel(x: edge / 16, y: edge / 2))")
                #expect(!Self.isBackground(pixels.pixel(x: edge * 3 / 4, y: edge / 2)), "\(name) \(edge)")
            }
        }
        // A rendition of a stored thumbnail's size is that thumbnail.
        var rendition = GetRenditionRequest()
        rendition.key = stored[0].info.key
        rendition.width = 96
        rendition.height = 96
        let answered = try await client.call(ImageServiceRPC.getRendition, rendition, options: Self.patient)
        #expect(thumbnails.contains { $0.key == answered.info?.key })
    }

    @Test func theWorkerMakesAPNGsThumbnailsOnItsBackgroundWeighsThemAndFailsOneOverItsLimitNamingIt() throws {
        let png = try Self.originals()[0].png
        let made = try ThumbnailWorkerHost.makeThumbnails(png, [32], with: Thumbnailer(background: RGBColor(red: 0, green: 0, blue: 0)))
        #expect(made.map { [$0.size, $0.width, $0.height] } == [[32, 32, 32]])
        let corner = try JPEG.decode(made[0].data).pixel(x: 1, y: 16)
        #expect(corner.r <= 8 && corner.g <= 8 && corner.b <= 8, "\(corner)")
        // Its RGB pixels (its alpha composited row by row as it decodes) and its largest size,
        // weighed before the slot is taken.
        #expect(ThumbnailWorkerHost.workingBytes(png, [32, 64]) == 128 * 128 * 3 + 64 * 64 * 11)
        let small = Thumbnailer(options: DecodeOptions(maxDecodedBytes: 1000))
        var refusal = ""
        do {
            _ = try ThumbnailWorkerHost.makeThumbnails(png, [32], with: small)
        } catch {
            refusal = "\(error)"
        }
        #expect(refusal == "PNG is over the decoded-bytes limit: its header declares 128×128, which decodes to 65536 bytes of pixels (4 a pixel), over the limit of 1000 bytes")
    }

    @Test func aWorkerWithLowerDecodeLimitsThanTheServiceFailsThePhotoForGoodNamingItsOwnFlag() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The service at its defaults stores both photos; this worker's limits, one by its flag
        // and one by the variable image-service reads too, refuse them.
        let (client, _, stop) = try MovieOriginalTests.launch(
            folder, workerArguments: ["--max-decoded-bytes", "1000"], workerEnvironment: ["HOMEPWNER_IMAGE_MAX_PIXELS": "50000"])
        defer { stop() }
        // 128×128 (within 50,000 pixels, over 1000 bytes) and 425×250 (over 50,000 pixels).
        let png = try await MovieOriginalTests.put(try Self.originals()[0].png, client)
        let jpeg = try await MovieOriginalTests.put(try Fixtures.pillowImage("icc_profile_big.jpg"), client)
        let dead = try await MovieOriginalTests.deadJobs(client, count: 2)
        let errors = try Dictionary(uniqueKeysWithValues: dead.map { (try ThumbnailJob(serializedBytes: $0.payload).imageKey, $0.lastError) })
        #expect(
            errors[png.key] == "image \(png.key) cannot be made into thumbnails: PNG is over the decoded-bytes limit: its header declares 128×128, which decodes to 65536 bytes of pixels (4 a pixel), over the limit of 1000 bytes (--max-decoded-bytes of this worker; give image-service and the workers the same)",
            "\(errors)")
        #expect(errors[jpeg.key]?.hasSuffix("(--max-pixels of this worker; give image-service and the workers the same)") == true, "\(errors)")
        #expect(dead.allSatisfy { $0.errors.count == 1 }, "failed for good at the first attempt")
    }

    @Test func aPNGUploadedInChunksIsValidatedWholeAndStored() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, stop) = try Self.launch(folder)
        defer { stop() }
        let png = try Self.originals()[0].png
        func upload(_ data: [UInt8]) async throws -> ImageInfo {
            var begin = BeginUploadRequest()
            begin.totalSize = Int64(data.count)
            let ticket = try await client.call(ImageServiceRPC.beginUpload, begin, options: Self.patient)
            var append = AppendUploadRequest()
            append.uploadId = ticket.uploadId
            append.data = data
            _ = try await client.call(ImageServiceRPC.appendUpload, append, options: Self.patient)
            var commit = CommitUploadRequest()
            commit.uploadId = ticket.uploadId
            return try await client.call(ImageServiceRPC.commitUpload, commit, options: Self.patient)
        }
        let info = try await upload(png)
        #expect(info.contentType == "image/png" && info.width == 128 && info.checksum == SHA256.checksum(png))
        var damaged = png
        damaged[damaged.count / 2] ^= 0x10
        let refused = await rpcError { try await upload(damaged) }
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.message.hasPrefix("data: PNG is damaged: a CRC does not match (chunk IDAT at offset") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.hasSuffix("; the upload is discarded") == true, "\(refused?.message ?? "")")
    }

    @Test func hostilePNGsAreRefusedWithPreciseCodesAndNothingIsStored() async throws {
        let folder = try ExecutableTests.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (client, stop) = try Self.launch(folder)
        defer { stop() }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            let crc = body.withUnsafeBytes { CRC32.checksum($0) }
            return PNGTestBytes.bigEndian(UInt32(data.count)) + body + PNGTestBytes.bigEndian(crc)
        }
        // 100,000 × 100,000 RGB in a file of 57 bytes.
        let huge = PNG.signature + chunk("IHDR", PNGTestBytes.bigEndian(100_000) + PNGTestBytes.bigEndian(100_000) + [8, 2, 0, 0, 0])
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
        // 8200 × 8200 grey, all 0: 67 MB of scanlines deflated to a small file, 269 MB of RGBA
        // pixels, over the default 256 MiB; under the pixel limit.
        let bomb = try PNG.encode(
            PNGPicture(width: 8200, height: 8200, bitDepth: 8, colorType: .gray, samples: [UInt8](repeating: 0, count: 8200 * 8200)))
        #expect(bomb.count < 200_000)
        let good = try Self.originals()[0].png
        let idat = try #require(PNGTestBytes.offset(of: "IDAT", in: good))
        var badCRC = good
        badCRC[idat + 30] ^= 0x01
        let cases: [(String, [UInt8], String)] = [
            ("huge", huge, "data: PNG of 100000×100000 = 10000000000 pixels is over the limit of 100000000 pixels (--max-pixels)"),
            ("bomb", bomb, "data: PNG of 8200×8200 decodes to 268960000 bytes of pixels (4 a pixel), over the limit of 268435456 bytes (--max-decoded-bytes): a decompression bomb, or a picture too large to render"),
            ("truncated", Array(good.prefix(idat + 200)), "data: PNG is truncated (chunk IDAT at offset \(idat) declares"),
            ("bad CRC", badCRC, "data: PNG is damaged: a CRC does not match (chunk IDAT at offset \(idat) has CRC 0x"),
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
        // The service is still there.
        var put = PutImageRequest()
        put.data = good
        #expect(try await client.call(ImageServiceRPC.putImage, put, options: Self.patient).contentType == "image/png")
    }
}

/// Bytes of PNG files the tests craft by hand.
enum PNGTestBytes {
    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }

    /// The offset of the first chunk of `type` in `png`.
    static func offset(of type: String, in png: [UInt8]) -> Int? {
        var at = 8
        while at + 8 <= png.count {
            let length = Int(png[at]) << 24 | Int(png[at + 1]) << 16 | Int(png[at + 2]) << 8 | Int(png[at + 3])
            if String(decoding: png[(at + 4)..<(at + 8)], as: UTF8.self) == type { return at }
            at += 12 + length
        }
        return nil
    }
}
