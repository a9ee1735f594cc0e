import Digest
import Dispatch
import Foundation
import JPEG
import Proto
import RPC
import Locking
import Testing
import TestSupport
@testable import ImageService
import RPCTestSupport

/// JPEGs with their frame header far into the file, or with broken scans, through PutImage,
/// the chunked upload and renditions.
@Suite struct JPEGValidationTests {
    /// The photo with 8 MB of extended-XMP APP1 segments before its frame header.
    static func photoAfter8MB() throws -> [UInt8] {
        JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 8 << 20), beforeFrameOf: try Samples.photo("Landscape_6.jpg"))
    }

    /// A small JPEG after 60,000 COM segments of 84 bytes (5 MB).
    static func afterTinySegments() throws -> [UInt8] {
        JPEGSplice.inserting(JPEGSplice.tinySegments(60_000, payload: 80), beforeFrameOf: try Samples.jpeg(width: 64, height: 48))
    }

    /// A small JPEG whose frame header starts at 4 MiB exactly, right after a full 64 KB APP1 segment.
    static func frameAt4MiB() throws -> [UInt8] {
        let small = try Samples.jpeg(width: 64, height: 48)
        let data = JPEGSplice.inserting(
            JPEGSplice.metadata(totalBytes: (4 << 20) - JPEGSplice.frameOffset(in: small), lastFull: true), beforeFrameOf: small)
        precondition(JPEGSplice.frameOffset(in: data) == 4 << 20)
        return data
    }

    @Test func putImageFindsTheFrameHeaderAfterMegabytesOfSegmentsAndRefusesThemCutShort() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        let photo = try Self.photoAfter8MB(), tiny = try Self.afterTinySegments(), boundary = try Self.frameAt4MiB()
        let cases = [("8 MB of APP1", photo, 1200, 1800, 6), ("60,000 COM", tiny, 64, 48, 1), ("SOF at 4 MiB", boundary, 64, 48, 1)]
        for (name, data, width, height, orientation) in cases {
            var put = PutImageRequest()
            put.data = data
            let info: ImageInfo
            do {
                info = try await client.call(ImageServiceRPC.putImage, put)
            } catch {
                Issue.record("\(name): \(error)")
                continue
            }
            #expect(info.contentType == "image/jpeg" && info.sizeBytes == Int64(data.count), "\(name)")
            #expect(info.width == Int32(width) && info.height == Int32(height) && info.orientation == Int32(orientation), "\(name)")
        }

        // Cut short inside a segment: INVALID_ARGUMENT naming the segment, and the service goes on.
        let frame = JPEGSplice.frameOffset(in: try Samples.photo("Landscape_6.jpg"))
        let tenth = frame + 9 * JPEGSplice.largestSegment
        let tinyFrame = JPEGSplice.frameOffset(in: try Samples.jpeg(width: 64, height: 48))
        let cuts: [([UInt8], String)] = [
            (Array(photo.prefix(tenth + 1000)),
             "data: JPEG is truncated (the APP1 segment at offset \(tenth) declares 65535 bytes, but only 998 remain)"),
            (Array(tiny.prefix(tinyFrame + 84 * 50_000 + 50)),
             "data: JPEG is truncated (the COM segment at offset \(tinyFrame + 84 * 50_000) declares 82 bytes, but only 48 remain)"),
            (Array(boundary.prefix((4 << 20) - 10)),
             "data: JPEG is truncated (the APP1 segment at offset \((4 << 20) - JPEGSplice.largestSegment) declares 65535 bytes, but only 65525 remain)"),
            (Array(boundary.prefix(4 << 20)),
             "data: JPEG is truncated (no frame header (SOF) before the end of the data at offset \(4 << 20))"),
        ]
        for (data, message) in cuts {
            var put = PutImageRequest()
            put.data = data
            let error = await rpcError { try await client.call(ImageServiceRPC.putImage, put) }
            #expect(error?.code == .invalidArgument && error?.message == message, "\(String(describing: error))")
        }
        var list = ListImagesRequest()
        list.pageSize = 100
        #expect(try await client.call(ImageServiceRPC.listImages, list).images.count == 3)
    }

    @Test func getRenditionOfAPhotoAfter8MBOfMetadataIsUprightAndScaled() async throws {
        let folder = try TemporaryFolder()
        let host = try ImageServiceHostTests.start(folder)
        defer { host.stop() }
        let client = try ImageServiceHostTests.client(folder)
        defer { client.close() }
        var put = PutImageRequest()
        put.data = try Self.photoAfter8MB()
        let info = try await client.call(ImageServiceRPC.putImage, put)
        _ = try await client.call(ImageServiceRPC.purgeCache, PurgeCacheRequest())
        var rendition = GetRenditionRequest()
        rendition.key = info.key
        rendition.width = 200
        rendition.height = 200
        let response = try await client.call(ImageServiceRPC.getRendition, rendition)
        let image = try JPEG.decode(response.data)
        // 1200×1800 stored with orientation 6: displayed 1800×1200.
        #expect(image.width == 200 && image.height == 133)
    }

    @Test func chunkedUploadFindsTheFrameHeaderAfter8MBAndItsRenditionDecodes() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let data = try Self.photoAfter8MB()
        let info = try await upload(data, to: store)
        #expect(info.width == 1200 && info.height == 1800 && info.orientation == 6 && info.sizeBytes == Int64(data.count))
        let rendition = try await store.rendition(info.key, width: 120, height: 120, mode: .fit)
        let image = try JPEG.decode(rendition.data)
        #expect(image.width == 120 && image.height == 80)
    }

    @Test func largeUploadWithoutEOIIsRefusedByWhereItEndsAndATrailerAfterEOIIsAccepted() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let data = try Self.photoAfter8MB()
        let cut = Array(data.dropLast(1000))
        let refused = await storeError { try await upload(cut, to: store) }
        #expect(refused == .invalid(
            "data: JPEG is truncated (the data ends at offset \(cut.count) inside the entropy-coded data of scan 1, before EOI); the upload is discarded"))
        // A motion photo: the image, then 3 MB of video after its EOI, ending in anything.
        let trailer = data + (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) } + [0xFF, 0xD8]
        let info = try await upload(trailer, to: store)
        #expect(info.width == 1200 && info.sizeBytes == Int64(trailer.count))
        #expect(try await store.list().images.map(\.key) == [info.key])
    }

    @Test func aValidHeaderWithFillerAndAnEOIIsRefused() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let small = try Samples.jpeg(width: 64, height: 48)
        let header = Array(small.prefix(JPEGSplice.scanDataOffset(in: small)))
        let sos = JPEGSplice.offset(of: [0xDA], in: small)
        let filler = header + (0..<1_000_000).map { UInt8($0 % 255) } + [0xFF, 0xD9]
        #expect(await storeError { try await store.put(filler, NewImage()) } == .invalid(
            "data: JPEG is damaged or unsupported (scan 1 (SOS at offset \(sos)) has 1000000 bytes of entropy-coded data; its 72 blocks can hold at most 18433)"))
        #expect(await storeError { try await upload(filler, to: store) } == .invalid(
            "data: JPEG is damaged or unsupported (scan 1 (SOS at offset \(sos)) has 1000000 bytes of entropy-coded data; its 72 blocks can hold at most 18433); the upload is discarded"))
        let short = header + [0x55, 0xAA, 0xFF, 0xD9]
        #expect(await storeError { try await store.put(short, NewImage()) } == .invalid(
            "data: JPEG is truncated (scan 1 (SOS at offset \(sos)) has 2 bytes of entropy-coded data; its 72 blocks need at least 18)"))
        #expect(try await store.list().images.isEmpty)
    }

    /// The limit of a structural check: Huffman codes that do not decode are only found by a
    /// decode, which PutImage does not do; GetRendition then says so.
    @Test func aWellFormedJPEGWhoseCodesDoNotDecodeIsStoredAndItsRenditionIsFailedPrecondition() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        var data = try Samples.jpeg(width: 64, height: 48)
        let start = JPEGSplice.scanDataOffset(in: data)
        // Scramble the middle of the scan without making or breaking any FF.
        for i in (start + 20)..<(data.count - 40) where data[i] != 0xFF && data[i - 1] != 0xFF {
            let scrambled = data[i] ^ 0x5A
            if scrambled != 0xFF { data[i] = scrambled }
        }
        let decodeError = try #require(throws: JPEGError.self) { try JPEG.decode(data) }
        let info = try await store.put(data, NewImage()).info
        #expect(await storeError { try await store.rendition(info.key, width: 32, height: 32, mode: .fit) }
            == .failedPrecondition("image \(info.key) cannot be rendered: its JPEG does not decode (\(decodeError.message))"))
    }

    @Test func anArithmeticCodedPutIsDecodedUnderTheRenderLimit() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let slots = ProcessInfo.processInfo.activeProcessorCount
        // Every render slot held by a thread of this test (never a task of the pool).
        let held = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for _ in 0..<slots { ImageStore.renders.wait() }
            held.signal()
        }
        await withVisibleCheckedContinuation { continuation in
            DispatchQueue.global().async {
                held.wait()
                continuation.resume()
            }
        }
        let done = Locked(false)
        let put = Task {
            defer { done.withLock { $0 = true } }
            return try await store.put(JPEGFixtures.arithmetic, NewImage())
        }
        // Until the put waits for a slot (a slot let go wakes a waiter: signal() says so) or ends
        // (it never waited). A slot let go with nobody waiting is taken back at once.
        var handedOver = false, finishedWhileHeld = false
        let end = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < end {
            finishedWhileHeld = done.withLock { $0 }
            if finishedWhileHeld { break }
            handedOver = ImageStore.renders.signal() != 0 || ImageStore.renders.wait(timeout: .now()) == .timedOut
            if handedOver { break }
            try await Task.sleep(for: .milliseconds(1))
        }
        for _ in 0..<(handedOver ? slots - 1 : slots) { ImageStore.renders.signal() }
        let info = try await put.value.info
        #expect(!finishedWhileHeld, "the arithmetic-coded JPEG was stored without waiting for a render slot")
        #expect(handedOver || finishedWhileHeld, "the put neither waited for a render slot nor finished in 30 s")
        #expect(info.width == 96 && info.height == 32)
        // Huffman-coded JPEGs are never decoded to be stored (their structure suffices).
    }

    /// cjpeg's arithmetic-coded JPEG (`frame`: SOF9 or SOF10) with `metadata` bytes of APP1
    /// segments and then 3 extraneous bytes before its frame header: the decode that validates
    /// it works on a copy without them, as large as the file.
    static func arithmeticPadded(_ jpeg: [UInt8], frame: UInt8, metadata: Int) -> [UInt8] {
        let at = JPEGSplice.offset(of: [frame], in: jpeg)
        return Array(jpeg[..<at]) + JPEGSplice.metadata(totalBytes: metadata) + [0x00, 0x2A, 0x00] + Array(jpeg[at...])
    }

    @Test func anArithmeticCodedJPEGOverTheDecodeLimitIsRefusedNamingItsSizeAndTheLimit() async throws {
        let folder = try TemporaryFolder()
        let limit: Int64 = 200_000
        let store = try makeStore(folder, limits: ImageStoreLimits(maxRenditionSourceBytes: limit))
        defer { store.close() }
        for (jpeg, frame) in [(JPEGFixtures.arithmetic, UInt8(0xC9)), (JPEGFixtures.arithmeticProgressive, UInt8(0xCA))] {
            let over = Self.arithmeticPadded(jpeg, frame: frame, metadata: 250_000)
            let validation = try JPEG.validate(over)
            #expect(!validation.entropyDataChecked && validation.extraneousBytes == 3)
            let expected = ImageStoreError.invalid(
                "data: arithmetic-coded JPEG of \(over.count) bytes is over the limit of \(limit) bytes (--max-rendition-source-bytes): such a JPEG is decoded whole to be validated; store it Huffman-coded (jpegtran -optimize), or raise the limit")
            #expect(await storeError { try await store.put(over, NewImage()) } == expected)
            let uploaded = await storeError { try await self.upload(over, to: store) }
            #expect(uploaded == .invalid(
                "data: arithmetic-coded JPEG of \(over.count) bytes is over the limit of \(limit) bytes (--max-rendition-source-bytes): such a JPEG is decoded whole to be validated; store it Huffman-coded (jpegtran -optimize), or raise the limit; the upload is discarded"),
                "\(String(describing: uploaded))")
            // At the limit it is decoded, and stored byte for byte.
            let at = Self.arithmeticPadded(jpeg, frame: frame, metadata: Int(limit) - jpeg.count - 3)
            #expect(Int64(at.count) == limit)
            let info = try await store.put(at, NewImage()).info
            #expect(try await store.read(info) == at && info.width == 96 && info.height == 32)
            #expect(try await store.read(try await self.upload(at, to: store)) == at)
        }
        // A Huffman-coded JPEG of that size is validated without a decode: not refused.
        let huffman = JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 250_000), beforeFrameOf: try Samples.jpeg())
        #expect(try await store.put(huffman, NewImage()).info.sizeBytes == Int64(huffman.count))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.blobs.temporaryFolder).isEmpty)
    }

    @Test func renditionOfACorruptedBlobIsDataLoss() async throws {
        let folder = try TemporaryFolder()
        let store = try makeStore(folder)
        let info = try await store.put(try Samples.photo("Landscape_1.jpg"), NewImage()).info
        _ = store.cache.purge(.critical, reason: "manual")
        let path = store.blobs.path(of: info.key)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        guard case .damaged(let message) = await storeError({ try await store.rendition(info.key, width: 50, height: 50, mode: .fit) }) else {
            Issue.record("expected DATA_LOSS"); return
        }
        #expect(message.hasPrefix("image \(info.key) is damaged on disk: content checksum"))
    }

    /// Stores `data` through BeginUpload, AppendUpload in 1 MiB chunks, and CommitUpload.
    func upload(_ data: [UInt8], to store: ImageStore) async throws -> ImageInfo {
        let ticket = try await store.beginUpload(NewImage(), totalSize: Int64(data.count), checksum: "")
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + (1 << 20))
            _ = try await store.appendUpload(ticket.uploadID, offset: Int64(offset), data: Array(data[offset..<end]))
            offset = end
        }
        return try await store.commitUpload(ticket.uploadID, checksum: SHA256.checksum(data))
    }
}
