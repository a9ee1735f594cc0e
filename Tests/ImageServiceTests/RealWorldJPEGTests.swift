import Digest
import Foundation
import JPEG
import Proto
import RPC
import Runtime
import Testing
import TestSupport
@testable import ImageService
import RPCTestSupport

/// Real odd JPEGs (Pillow's test images, `Tests/Fixtures/pillow`) through PutImage, GetImage
/// and GetRendition on a real socket: what every viewer opens is stored as sent and rendered;
/// what is cut off or does not decode is refused as before.
@Suite struct RealWorldJPEGTests {
    static func put(_ client: RPCClient, _ data: [UInt8]) async throws -> ImageInfo {
        var request = PutImageRequest()
        request.data = data
        return try await client.call(ImageServiceRPC.putImage, request)
    }

    static func rendition(_ client: RPCClient, _ key: String, _ width: Int, _ height: Int) async throws -> GetRenditionResponse {
        var request = GetRenditionRequest()
        request.key = key
        request.width = Int32(width)
        request.height = Int32(height)
        return try await client.call(ImageServiceRPC.getRendition, request)
    }

    @Test func jpegsWithExtraneousBytesBetweenSegmentsArePutStoredByteForByteAndRendered() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        for file in QuirkyJPEGs.files {
            let data = try Fixtures.pillowImage(file.name)
            let info: ImageInfo
            do {
                info = try await Self.put(client, data)
            } catch {
                Issue.record("\(file.name): \(error)")
                continue
            }
            #expect(info.contentType == "image/jpeg" && info.sizeBytes == Int64(data.count), "\(file.name)")
            #expect(info.width == Int32(file.width) && info.height == Int32(file.height) && info.orientation == 1, "\(file.name)")
            #expect(info.checksum == SHA256.checksum(data), "\(file.name)")
            var get = GetImageRequest()
            get.key = info.key
            let stored = try await client.call(ImageServiceRPC.getImage, get)
            #expect(stored.data == data && stored.info?.checksum == SHA256.checksum(data), "\(file.name)")
            // From the copy the put cached, then from the file, mapped.
            let fit = (64 * file.width / max(file.width, file.height), 64 * file.height / max(file.width, file.height))
            let first = try await Self.rendition(client, info.key, 64, 64)
            let image = try JPEG.decode(first.data)
            #expect(image.width == fit.0 && image.height == fit.1, "\(file.name): \(image.width)×\(image.height)")
            _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
            let mapped = try JPEG.decode(try await Self.rendition(client, info.key, 32, 32).data)
            #expect(mapped.width == fit.0 / 2 && mapped.height == fit.1 / 2, "\(file.name)")
        }
    }

    @Test func aPutOrUploadWithExtraneousBytesIsLoggedWithTheirCountAndOffset() async throws {
        let folder = try TemporaryFolder()
        let collector = LogCollector()
        let store = try ImageStore(
            folder: folder.path + "/images", cache: ImageCache(budgetBytes: 8 << 20), limits: .init(), clock: SystemClock(),
            logger: Logger(label: "image-test", level: .info, sink: .collecting(collector))).started()
        let junk = QuirkyJPEGs.files[0], photoshop = QuirkyJPEGs.files[1]
        let put = try await store.put(try Fixtures.pillowImage(junk.name), NewImage()).info
        let data = try Fixtures.pillowImage(photoshop.name)
        let ticket = try await store.beginUpload(NewImage(), totalSize: Int64(data.count), checksum: "")
        _ = try await store.appendUpload(ticket.uploadID, offset: 0, data: data)
        let uploaded = try await store.commitUpload(ticket.uploadID, checksum: SHA256.checksum(data))
        _ = try await store.put(try Samples.jpeg(), NewImage())
        let notes = collector.lines.filter { $0.contains("extraneous") }
        #expect(notes.count == 2, "\(collector.lines)")
        #expect(notes.first?.hasSuffix(
            "info image-test: image \(put.key): its JPEG has 5 extraneous bytes between marker segments in 1 run(s), the first at offset 81; decoders skip them, and so do renditions; stored as sent") == true,
            "\(notes)")
        #expect(notes.last?.contains("image \(uploaded.key): its JPEG has 16 extraneous bytes between marker segments in 1 run(s), the first at offset 4442") == true)
    }

    @Test func cutOffFilesAndStrayBytesPastTheLimitStayInvalidArgument() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let small = try Samples.jpeg(width: 64, height: 48)
        let frame = JPEGSplice.frameOffset(in: small)
        let filler = Array(small[..<frame]) + (0..<1_000_000).map { UInt8($0 % 255) } + Array(small[frame...])
        let cases: [(String, [UInt8], String)] = [
            // Cut off right after the primary image's SOS header (see Tests/Fixtures/pillow/SOURCE.md).
            ("ultrahdr.jpg", try Fixtures.pillowImage("ultrahdr.jpg"),
             "data: JPEG is truncated (the data ends at offset 48197 inside the entropy-coded data of scan 1, before EOI)"),
            ("truncated_jpeg.jpg", try Fixtures.pillowImage("truncated_jpeg.jpg"),
             "data: JPEG is truncated (the data ends at offset 6698 inside the entropy-coded data of scan 10, before EOI)"),
            ("1 MB of filler before the frame header", filler,
             "data: JPEG is damaged or unsupported (more than 65536 extraneous bytes between marker segments: no marker within 65536 bytes of offset \(frame); a JPEG's segments follow one another, with at most a few stray bytes between them)"),
        ]
        for (name, data, message) in cases {
            var put = PutImageRequest()
            put.data = data
            let error = await rpcError { try await client.call(ImageServiceRPC.putImage, put) }
            #expect(error?.code == .invalidArgument && error?.message == message, "\(name): \(String(describing: error))")
        }
        var list = ListImagesRequest()
        list.pageSize = 10
        #expect(try await client.call(ImageServiceRPC.listImages, list).images.isEmpty)
    }

    /// What the cut-off ultrahdr.jpg was: its metadata (EXIF, ICC, XMP, MPF) before a primary
    /// image, and a gain-map JPEG after the primary's EOI.
    @Test func anUltraHDRLayoutIsAcceptedAndItsPrimaryImageRendered() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let cutOff = try Fixtures.pillowImage("ultrahdr.jpg")
        // Its segments up to the end of the MPF APP2, where its DQT begins.
        let metadata = Array(cutOff[..<JPEGSplice.offset(of: [0xDB], in: cutOff)])
        #expect(metadata.count == 47594)
        let primary = try Samples.jpeg(width: 151, height: 269), gainMap = try Samples.jpeg(width: 38, height: 68)
        let data = metadata + Array(primary[JPEGSplice.offset(of: [0xDB], in: primary)...]) + gainMap
        let info = try await Self.put(client, data)
        #expect(info.width == 151 && info.height == 269 && info.orientation == 1 && info.sizeBytes == Int64(data.count))
        let image = try JPEG.decode(try await Self.rendition(client, info.key, 100, 100).data)
        #expect(image.width == 56 && image.height == 100)
    }

    @Test func aJPEGWhoseScanDoesNotDecodeIsStoredAsSentAndItsRenditionIsFailedPrecondition() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        // hopper_bad_exif.jpg: bytes left over before most of its restart markers, and bad
        // Huffman codes (see SOURCE.md); a restart-marker JPEG with 40 bytes inserted before RST4.
        let fixture = JPEGFixtures.restartEveryMCU
        let rst4 = try #require((2..<fixture.count - 1).first { fixture[$0] == 0xFF && fixture[$0 + 1] == 0xD4 })
        let cases: [(String, [UInt8], String)] = [
            ("hopper_bad_exif.jpg", try Fixtures.pillowImage("hopper_bad_exif.jpg"),
             "Corrupt JPEG data: 1214 extraneous bytes before marker 0xd0"),
            ("40 bytes before RST4", Array(fixture[..<rst4]) + (1...40).map { UInt8($0) } + Array(fixture[rst4...]),
             "Corrupt JPEG data: 40 extraneous bytes before marker 0xd4"),
        ]
        for (name, data, decoderMessage) in cases {
            let info = try await Self.put(client, data)
            var get = GetImageRequest()
            get.key = info.key
            #expect(try await client.call(ImageServiceRPC.getImage, get).data == data, "\(name)")
            var request = GetRenditionRequest()
            request.key = info.key
            request.width = 64
            request.height = 64
            let error = await rpcError { try await client.call(ImageServiceRPC.getRendition, request) }
            #expect(error?.code == .failedPrecondition, "\(name): \(String(describing: error))")
            #expect(error?.message == "image \(info.key) cannot be rendered: its JPEG does not decode (\(decoderMessage))", "\(name)")
        }
    }
}
