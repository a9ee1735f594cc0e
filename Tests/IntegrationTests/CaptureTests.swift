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

/// Capture end to end: item-service's CaptureService and `capture` queue, a capture worker
/// obtaining the photo from each source and storing it through image-service, over real
/// sockets, with a real photo library folder and a real camera command.
@Suite struct CaptureTests {
    /// A running suite (image-service, item-service, capture-worker) with a photo library in a
    /// temporary folder and a camera that runs `camera.sh` there (rewritten by the tests).
    final class Suite: @unchecked Sendable {
        let harness: Harness
        let items: RPCClient
        let images: RPCClient
        let library: String
        let cameraScript: String
        let item: String

        init(cameraTimeoutMilliseconds: Int = 30_000, albumWritable: Bool = false) async throws {
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
                try harness.start(.captureWorker)
                items = try harness.client(.itemService)
                images = try harness.client(.imageService)
                var create = CreateItemRequest()
                create.name = "Lamp"
                item = try await items.call(ItemServiceRPC.createItem, create, options: .init(timeoutMilliseconds: 30_000)).key
            } catch {
                harness.shutdown()
                throw error
            }
            _ = root
        }

        func stop() {
            items.close()
            images.close()
            harness.shutdown()
            try? FileManager.default.removeItem(atPath: (library as NSString).deletingLastPathComponent)
        }

        /// Captures and waits (60 s at most) for the job to be DONE or FAILED.
        func capture(_ configure: (inout CaptureRequest) -> Void) async throws -> CaptureJob {
            var request = CaptureRequest()
            request.itemKey = item
            configure(&request)
            let queued = try #require(try await items.call(CaptureServiceRPC.capture, request, options: .init(timeoutMilliseconds: 30_000)).job)
            return try await finished(queued.jobId)
        }

        func finished(_ id: String) async throws -> CaptureJob {
            var get = GetCaptureJobRequest()
            get.jobId = id
            let end = monotonicMilliseconds() + 60_000
            while true {
                let job = try #require(try await items.call(CaptureServiceRPC.getCaptureJob, get).job)
                if job.state == .done || job.state == .dead { return job }
                guard monotonicMilliseconds() < end else {
                    Issue.record("capture job \(id) still \(job.state.rawValue) after 60 s")
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

        func setCamera(_ script: String) throws {
            try script.write(toFile: cameraScript, atomically: true, encoding: .utf8)
        }
    }

    @Test func eachSourceEndToEndStoresTheOriginalUntouchedAndAttachesIt() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")

        // upload, inline
        let inline = try await suite.capture { $0.source = .upload; $0.data = try! Fixtures.orientationPhoto("Landscape_3.jpg") }
        #expect(inline.state == .done && !inline.duplicate && inline.errorCode == 0, "\(inline.error)")
        #expect(try await suite.info(inline.originalKey).checksum == SHA256.checksum(try Fixtures.orientationPhoto("Landscape_3.jpg")))

        // library: a file by its path inside the library
        let library = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        #expect(library.state == .done, "\(library.error)")
        let stored = try await suite.info(library.originalKey)
        #expect(stored.checksum == SHA256.checksum(lamp) && stored.ownerKey == suite.item && stored.kind == .original)

        // camera: what the command prints
        let camera = try await suite.capture { $0.source = .camera }
        #expect(camera.state == .done, "\(camera.error)")
        #expect(try await suite.info(camera.originalKey).checksum == SHA256.checksum(try Fixtures.orientationPhoto("Portrait_1.jpg")))

        // upload by the key of a committed chunked upload
        let movieLike = try Fixtures.orientationPhoto("Portrait_5.jpg")
        var begin = BeginUploadRequest()
        begin.ownerKey = suite.item
        begin.totalSize = Int64(movieLike.count)
        let upload = try await suite.images.call(ImageServiceRPC.beginUpload, begin)
        var append = AppendUploadRequest()
        append.uploadId = upload.uploadId
        append.data = movieLike
        _ = try await suite.images.call(ImageServiceRPC.appendUpload, append)
        var commit = CommitUploadRequest()
        commit.uploadId = upload.uploadId
        let committed = try await suite.images.call(ImageServiceRPC.commitUpload, commit)
        let byKey = try await suite.capture { $0.source = .upload; $0.imageKey = committed.key; $0.makePrimary = true }
        #expect(byKey.state == .done && byKey.originalKey == committed.key, "\(byKey.error)")

        let item = try await suite.getItem()
        #expect(item.photoKeys == [inline.originalKey, library.originalKey, camera.originalKey, committed.key])
        #expect(item.primaryPhotoKey == committed.key)
        #expect(Set([inline, library, camera, byKey].map(\.itemKey)) == [suite.item])
    }

    @Test func recentTakesTheNewestPhotoByItsExifDateElseItsFileTime() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        let folder = suite.library + "/" + CaptureSources.recentFolder
        let old = try Fixtures.orientationPhoto("Landscape_2.jpg"), newer = try Fixtures.orientationPhoto("Landscape_4.jpg")
        try Data(old).write(to: URL(fileURLWithPath: folder + "/old.jpg"))
        try Data(newer).write(to: URL(fileURLWithPath: folder + "/newer.jpg"))
        try "not a photo".write(toFile: folder + "/notes.txt", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)], ofItemAtPath: folder + "/old.jpg")
        let byTime = try await suite.capture { $0.source = .recent }
        #expect(byTime.state == .done, "\(byTime.error)")
        #expect(try await suite.info(byTime.originalKey).checksum == SHA256.checksum(newer))

        // Taken in 2031 by its EXIF, though its file is a year old: it is the newest photo.
        let dated = CaptureTests.withDateTimeOriginal("2031:01:02 03:04:05", try Fixtures.orientationPhoto("Landscape_7.jpg"))
        #expect(EXIF.dateTimeOriginal(in: dated) == "2031:01:02 03:04:05")
        try Data(dated).write(to: URL(fileURLWithPath: folder + "/dated.jpg"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -365 * 86_400)], ofItemAtPath: folder + "/dated.jpg")
        let byExif = try await suite.capture { $0.source = .recent }
        #expect(try await suite.info(byExif.originalKey).checksum == SHA256.checksum(dated), "\(byExif.error)")
    }

    @Test func theSamePhotoTwiceIsStoredOnceAndTheSecondJobNamesTheFirst() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        let first = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        let again = try await suite.capture { $0.source = .upload; $0.data = try! Fixtures.orientationPhoto("Landscape_1.jpg") }
        #expect(first.state == .done && !first.duplicate)
        #expect(again.state == .done && again.duplicate && again.originalKey == first.originalKey, "\(again.error)")
        #expect(try await suite.getItem().photoKeys == [first.originalKey])
        #expect(try await suite.imagesOf(suite.item).map(\.key) == [first.originalKey])
    }

    @Test func anItemDeletedWhileItsCaptureRunsKeepsNoImage() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        // The camera takes a second: the item is deleted while the job is RUNNING.
        let marker = suite.library + "/../camera-started"
        try suite.setCamera("touch '\(marker)'; sleep 1; cat '\(Fixtures.orientationFolder.path)/Portrait_1.jpg'\n")
        var request = CaptureRequest()
        request.itemKey = suite.item
        request.source = .camera
        let queued = try #require(try await suite.items.call(CaptureServiceRPC.capture, request).job)
        let end = monotonicMilliseconds() + 30_000
        while !FileManager.default.fileExists(atPath: marker) && monotonicMilliseconds() < end { try await Task.sleep(for: .milliseconds(10)) }
        var delete = DeleteItemRequest()
        delete.key = suite.item
        _ = try await suite.items.call(ItemServiceRPC.deleteItem, delete)
        let job = try await suite.finished(queued.jobId)
        #expect(job.state == .dead && job.errorCode == StatusCode.notFound.rawValue, "\(job.error)")
        #expect(job.error.contains("deleted"))
        // Whatever the worker stored before it found out is gone, as is the cascade's share.
        try await eventuallyEmpty { try await suite.imagesOf(suite.item) }
    }

    @Test func badSourcesEndTheJobFailedWithAPreciseCodeAndStoreNothing() async throws {
        let suite = try await Suite(cameraTimeoutMilliseconds: 500)
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        try Data(Array(lamp.prefix(lamp.count / 2))).write(to: URL(fileURLWithPath: suite.library + "/truncated.jpg"))
        try Data().write(to: URL(fileURLWithPath: suite.library + "/empty.jpg"))
        try "hello".write(toFile: suite.library + "/text.jpg", atomically: true, encoding: .utf8)
        try Data(CaptureTests.claiming(width: 65000, height: 65000, lamp)).write(to: URL(fileURLWithPath: suite.library + "/huge.jpg"))
        try FileManager.default.createSymbolicLink(atPath: suite.library + "/escape.jpg", withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: suite.library + "/inside.jpg", withDestinationPath: suite.library + "/trip/lamp.jpg")
        let cases: [(String, Int32, String)] = [
            ("truncated.jpg", 3, "not a photo"),
            ("empty.jpg", 3, "empty"),
            ("text.jpg", 3, "not a photo"),
            ("huge.jpg", 3, "65000"),
            ("escape.jpg", 7, "symlink"),
            ("missing.jpg", 5, "no file"),
            ("trip", 3, "not a regular file"),
        ]
        for (path, code, words) in cases {
            let job = try await suite.capture { $0.source = .library; $0.sourcePath = path }
            #expect(job.state == .dead && job.errorCode == code && job.error.contains(words), "\(path): \(job.errorCode) \(job.error)")
            #expect(job.attempts == 1, "\(path): a refusal is final, not retried (\(job.attempts) attempts)")
        }
        // A symlink that stays inside the library is a file of it.
        #expect(try await suite.capture { $0.source = .library; $0.sourcePath = "inside.jpg" }.state == .done)

        // Uploaded bytes that are no photo.
        for (data, words) in [(Array(lamp.prefix(5000)), "not a photo"), (Array("GIF89a-----".utf8), "not a photo")] {
            let job = try await suite.capture { $0.source = .upload; $0.data = data }
            #expect(job.state == .dead && job.errorCode == 3 && job.error.contains(words), "\(job.error)")
        }

        // A camera that fails, hangs or prints garbage.
        let cameras: [(String, Int32, String)] = [
            ("echo broken >&2; exit 3\n", 9, "exited with status 3"),
            ("echo 'no device /dev/video0' >&2; exit 1\n", 9, "it said: no device /dev/video0"),
            ("sleep 30\n", 4, "did not finish within 500 ms"),
            ("echo garbage\n", 3, "not a JPEG"),
            ("true\n", 3, "printed nothing"),
        ]
        for (script, code, words) in cameras {
            try suite.setCamera(script)
            let job = try await suite.capture { $0.source = .camera }
            #expect(job.state == .dead && job.errorCode == code && job.error.contains(words), "\(script): \(job.errorCode) \(job.error)")
        }
        // Only the one good capture was kept; the worker lives on.
        #expect(try await suite.imagesOf(suite.item).count == 1)
        try suite.setCamera("cat '\(Fixtures.orientationFolder.path)/Portrait_1.jpg'\n")
        #expect(try await suite.capture { $0.source = .camera }.state == .done)
    }

    @Test func requestsThatCanNeverWorkAreRefusedAtOnceNamingWhatIsWrong() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        func expectRefused(_ code: StatusCode, _ words: String, _ configure: (inout CaptureRequest) -> Void) async {
            let error = await suite.refused(configure)
            #expect(error?.code == code && error?.message.contains(words) == true, "\(words): \(String(describing: error))")
        }
        await expectRefused(.invalidArgument, "must not leave the library") { $0.source = .library; $0.sourcePath = "../secret.jpg" }
        await expectRefused(.invalidArgument, "relative") { $0.source = .library; $0.sourcePath = "/etc/passwd" }
        await expectRefused(.invalidArgument, "empty") { $0.source = .library; $0.sourcePath = "" }
        await expectRefused(.invalidArgument, "source must be") { $0.source = .unspecified }
        await expectRefused(.invalidArgument, "needs data") { $0.source = .upload }
        await expectRefused(.invalidArgument, "not both") { $0.source = .upload; $0.data = [1]; $0.imageKey = UUID().uuidString }
        await expectRefused(.invalidArgument, "over the") { $0.source = .upload; $0.data = [UInt8](repeating: 0, count: (8 << 20) + 1) }
        await expectRefused(.notFound, "no item") { $0.itemKey = UUID().uuidString; $0.source = .upload; $0.data = [1] }
        await expectRefused(.invalidArgument, "item_key") { $0.itemKey = "lamp"; $0.source = .upload; $0.data = [1] }
        var edit = Edit()
        edit.scale = .nan
        await expectRefused(.invalidArgument, "scale") { [edit] in $0.source = .camera; $0.edit = edit }
        edit.scale = -1
        await expectRefused(.invalidArgument, "scale") { [edit] in $0.source = .camera; $0.edit = edit }
        edit = Edit()
        edit.cropWidth = 10
        await expectRefused(.invalidArgument, "empty") { [edit] in $0.source = .camera; $0.edit = edit }
        edit.cropHeight = 10
        edit.cropX = -1
        await expectRefused(.invalidArgument, "crop_x") { [edit] in $0.source = .camera; $0.edit = edit }
        edit = Edit()
        edit.outputSize = 9000
        await expectRefused(.invalidArgument, "output_size") { [edit] in $0.source = .camera; $0.edit = edit }
        edit = Edit()
        edit.shape = .square
        await expectRefused(.invalidArgument, "movie") { [edit] in $0.source = .camera; $0.mediaType = .movie; $0.edit = edit }
    }

    @Test func editsAreStoredAsEditedBesideTheUntouchedOriginalCheckedByTheirPixels() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        let upright = try JPEG.decode(lamp)  // 1800×1200, orientation 1
        func edit(_ x: Int32, _ y: Int32, _ w: Int32, _ h: Int32, scale: Double = 0, shape: EditShape = .unspecified, size: Int32 = 0) -> Edit {
            var edit = Edit()
            (edit.cropX, edit.cropY, edit.cropWidth, edit.cropHeight) = (x, y, w, h)
            edit.scale = scale
            edit.shape = shape
            edit.outputSize = size
            return edit
        }
        func pixels(_ key: String) async throws -> RGBImage {
            var get = GetImageRequest()
            get.key = key
            return try JPEG.decode(try await suite.images.call(ImageServiceRPC.getImage, get).data)
        }

        // A crop, made primary: the original untouched, the edit EDITED from it, both attached.
        let cropped = try await suite.capture {
            $0.source = .library; $0.sourcePath = "trip/lamp.jpg"; $0.edit = edit(100, 50, 400, 300); $0.makePrimary = true
        }
        #expect(cropped.state == .done && !cropped.editedKey.isEmpty, "\(cropped.error)")
        #expect(try await suite.info(cropped.originalKey).checksum == SHA256.checksum(lamp))
        let editedInfo = try await suite.info(cropped.editedKey)
        #expect(editedInfo.kind == .edited && editedInfo.parentKey == cropped.originalKey && editedInfo.ownerKey == suite.item)
        #expect((editedInfo.width, editedInfo.height) == (400, 300))
        let item = try await suite.getItem()
        #expect(item.photoKeys == [cropped.originalKey, cropped.editedKey] && item.primaryPhotoKey == cropped.editedKey)
        let crop = try await pixels(cropped.editedKey)
        #expect(CaptureTests.meanDifference(crop, upright.cropped(x: 100, y: 50, width: 400, height: 300)) < 4)

        // On the MCU grid, a crop alone is made on the DCT coefficients: the same pixels, not a
        // re-encode (one at quality 90 differs by a level or more almost everywhere).
        let aligned = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(160, 96, 320, 240) }
        #expect(aligned.duplicate && aligned.originalKey == cropped.originalKey, "the same bytes again are that photo")
        let exact = try await pixels(aligned.editedKey)
        let reference = upright.cropped(x: 160, y: 96, width: 320, height: 240)
        #expect(CaptureTests.meanDifference(exact.cropped(x: 1, y: 1, width: 318, height: 238), reference.cropped(x: 1, y: 1, width: 318, height: 238)) == 0)

        // EXIF 6: the crop is in upright coordinates (the stored pixels are turned).
        let turned = try await suite.capture {
            $0.source = .upload; $0.data = try! Fixtures.orientationPhoto("Landscape_6.jpg"); $0.edit = edit(300, 200, 600, 400)
        }
        let turnedCrop = try await pixels(turned.editedKey)
        #expect((turnedCrop.width, turnedCrop.height) == (600, 400))
        let difference = CaptureTests.meanDifference(turnedCrop, upright.cropped(x: 300, y: 200, width: 600, height: 400))
        #expect(difference < 20, "an EXIF-6 crop differs from the upright photo's by \(difference) a sample (a crop of the stored pixels: ~90)")

        // Square and circle (white outside), zoom, output size.
        let square = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(0, 0, 800, 600, shape: .square) }
        let squareInfo = try await suite.info(square.editedKey)
        #expect((squareInfo.width, squareInfo.height) == (600, 600))
        let round = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(600, 300, 600, 600, shape: .circle) }
        let circle = try await pixels(round.editedKey)
        #expect((circle.width, circle.height) == (600, 600))
        for (x, y) in [(2, 2), (597, 2), (2, 597), (597, 597)] {
            let corner = circle.pixel(x: x, y: y)
            #expect(min(corner.r, corner.g, corner.b) >= 240, "corner \(x),\(y) of a circle is the background: \(corner)")
        }
        #expect(CaptureTests.meanDifference(circle.cropped(x: 200, y: 200, width: 200, height: 200), upright.cropped(x: 800, y: 500, width: 200, height: 200)) < 4)
        let zoom = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(400, 200, 800, 600, scale: 2) }
        let zoomed = try await pixels(zoom.editedKey)
        #expect((zoomed.width, zoomed.height) == (800, 600))
        let middle = upright.cropped(x: 600, y: 350, width: 400, height: 300).resized(width: 800, height: 600)
        #expect(CaptureTests.meanDifference(zoomed, middle) < 6, "zoom 2 shows the middle half of the crop, magnified")
        let small = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(0, 0, 0, 0, size: 200) }
        let smallInfo = try await suite.info(small.editedKey)
        #expect((smallInfo.width, smallInfo.height) == (200, 133) || (smallInfo.width, smallInfo.height) == (200, 134))

        // A crop outside the photo: FAILED, and nothing new stored.
        let before = try await suite.imagesOf(suite.item).count
        let outside = try await suite.capture {
            $0.source = .upload; $0.data = try! Fixtures.orientationPhoto("Landscape_2.jpg"); $0.edit = edit(1700, 0, 200, 100)
        }
        #expect(outside.state == .dead && outside.errorCode == 3 && outside.error.contains("outside"), "\(outside.error)")
        #expect(try await suite.imagesOf(suite.item).count == before)
    }

    /// The mean absolute difference per sample of two images of one size.
    static func meanDifference(_ a: RGBImage, _ b: RGBImage) -> Double {
        guard a.width == b.width, a.height == b.height else { return .infinity }
        var total = 0
        for index in a.pixels.indices { total += abs(Int(a.pixels[index]) - Int(b.pixels[index])) }
        return Double(total) / Double(a.pixels.count)
    }

    @Test func aHundredMebibyteMovieGoesInWholeThroughAChunkedUploadWithItsChecksum() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        // An MP4 by its signature ("ftyp" at 4), then 100 MiB of noise.
        var movie = [UInt8](repeating: 0, count: 100 << 20)
        var generator = SplitMix64(seed: 13)
        for index in stride(from: 0, to: movie.count, by: 8) {
            withUnsafeBytes(of: generator.next()) { movie.replaceSubrange(index..<(index + 8), with: $0) }
        }
        movie.replaceSubrange(0..<12, with: [0, 0, 0, 0x18] + Array("ftypisom".utf8))
        let checksum = SHA256.checksum(movie)
        var begin = BeginUploadRequest()
        begin.ownerKey = suite.item
        begin.totalSize = Int64(movie.count)
        begin.checksum = checksum
        begin.mediaType = .movie
        let upload = try await suite.images.call(ImageServiceRPC.beginUpload, begin)
        let chunk = Int(upload.maxChunkBytes)
        var offset = 0
        while offset < movie.count {
            var append = AppendUploadRequest()
            append.uploadId = upload.uploadId
            append.offset = Int64(offset)
            append.data = Array(movie[offset..<min(movie.count, offset + chunk)])
            _ = try await suite.images.call(ImageServiceRPC.appendUpload, append, options: .init(timeoutMilliseconds: 60_000))
            offset += append.data.count
        }
        var commit = CommitUploadRequest()
        commit.uploadId = upload.uploadId
        let stored = try await suite.images.call(ImageServiceRPC.commitUpload, commit, options: .init(timeoutMilliseconds: 120_000))
        let job = try await suite.capture { $0.source = .upload; $0.imageKey = stored.key; $0.mediaType = .movie; $0.makePrimary = true }
        #expect(job.state == .done && job.originalKey == stored.key && job.editedKey.isEmpty, "\(job.error)")
        let info = try await suite.info(stored.key)
        #expect(info.mediaType == .movie && info.contentType == "video/mp4" && info.sizeBytes == Int64(movie.count))
        #expect(info.checksum == checksum)
        #expect(try await suite.getItem().primaryPhotoKey == stored.key)
        // The upload's staging file is gone: the movie lives only as the stored blob.
        let staging = suite.harness.dataDirectory + "/images/uploads"
        let left = try FileManager.default.contentsOfDirectory(atPath: staging)
        #expect(left.isEmpty, "staging files left: \(left)")
        // A movie with an edit is refused before any job.
        var edit = Edit()
        edit.shape = .square
        let refused = await suite.refused { [edit] in $0.source = .upload; $0.imageKey = stored.key; $0.mediaType = .movie; $0.edit = edit }
        #expect(refused?.code == .invalidArgument)
    }

    @Test func aCaptureThatWouldOverfillItsItemFailsWithNothingStored() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        // 99 photos: room for an original, not for an original and its edit.
        for index in 0..<99 {
            var put = PutImageRequest()
            put.ownerKey = suite.item
            put.data = CaptureTests.tinyJPEG(index)
            var attach = AttachPhotoRequest()
            attach.itemKey = suite.item
            attach.imageKey = try await suite.images.call(ImageServiceRPC.putImage, put).key
            _ = try await suite.items.call(ItemServiceRPC.attachPhoto, attach)
        }
        var edit = Edit()
        edit.shape = .square
        let full = try await suite.capture { [edit] in $0.source = .library; $0.sourcePath = "trip/lamp.jpg"; $0.edit = edit }
        #expect(full.state == .dead && full.errorCode == 9 && full.error.contains("adds 2"), "\(full.error)")
        #expect(try await suite.imagesOf(suite.item).count == 99)
        let one = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        #expect(one.state == .done, "\(one.error)")
        #expect(try await suite.getItem().photoKeys.count == 100)
    }

    /// A distinct 8×8 JPEG for each `seed`.
    static func tinyJPEG(_ seed: Int) -> [UInt8] {
        let pixels = (0..<(8 * 8 * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed &* 13) }
        return try! JPEG.encode(RGBImage(width: 8, height: 8, pixels: pixels), quality: 90)
    }

    @Test func everyOddRealPhotoIsCapturedWithAnEditOrRefusedWithCode3AndTheWorkerGoesOn() async throws {
        let suite = try await Suite()
        defer { suite.stop() }
        var edit = Edit()
        edit.shape = .circle
        let names = try FileManager.default.contentsOfDirectory(atPath: Fixtures.pillowFolder.path).filter { $0.hasSuffix(".jpg") }.sorted()
        var done: [String] = [], refused: [String] = []
        for name in names {
            let job = try await suite.capture { [edit] in $0.source = .upload; $0.data = try! Fixtures.pillowImage(name); $0.edit = edit }
            if job.state == .done {
                done.append(name)
                // The edit of a CMYK, grey, ICC-tagged or GPS-tagged photo is an upright JPEG that decodes.
                var get = GetImageRequest()
                get.key = job.editedKey
                let edited = try await suite.images.call(ImageServiceRPC.getImage, get).data
                #expect((try? JPEG.decode(edited)) != nil, "\(name): its edit does not decode")
                #expect(EXIF.orientation(in: edited) == nil, "\(name): its edit carries EXIF")
            } else {
                #expect(job.state == .dead && job.errorCode == 3 && job.attempts == 1, "\(name): \(job.errorCode) \(job.error)")
                refused.append(name)
            }
        }
        // The ones every viewer opens are captured; the cut-off and broken ones are refused.
        #expect(done.contains("pil_sample_cmyk.jpg") && done.contains("hopper_gray.jpg") && done.contains("junk_jpeg_header.jpg"), "\(done)")
        #expect(refused.contains("truncated_jpeg.jpg"), "\(refused)")
        // A file over the size a capture reads is refused before it is read (a sparse file).
        let huge = suite.library + "/huge-file.jpg"
        FileManager.default.createFile(atPath: huge, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: huge))
        try handle.truncate(atOffset: UInt64((1 << 30) + 1))
        try handle.close()
        let tooLarge = try await suite.capture { $0.source = .library; $0.sourcePath = "huge-file.jpg" }
        #expect(tooLarge.state == .dead && tooLarge.errorCode == 3 && tooLarge.error.contains("over the"), "\(tooLarge.error)")
        #expect(try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }.state == .done)
    }

    @Test func saveToAlbumWritesOnlyWhereAllowedAndNeverOverAFile() async throws {
        let locked = try await Suite()
        defer { locked.stop() }
        let photo = try await locked.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        var save = SaveToAlbumRequest()
        save.imageKey = photo.originalKey
        do {
            _ = try await locked.items.call(CaptureServiceRPC.saveToAlbum, save, options: .init(retry: .none))
            Issue.record("SaveToAlbum wrote where the deployment does not allow it")
        } catch {
            #expect(error.code == .permissionDenied && error.message.contains("--album-writable true"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: locked.library + "/" + CaptureSources.albumFolder))

        let suite = try await Suite(albumWritable: true)
        defer { suite.stop() }
        let lamp = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        save.imageKey = lamp.originalKey
        save.album = "Holiday 2026"
        let saved = try await suite.items.call(CaptureServiceRPC.saveToAlbum, save, options: .init(retry: .none)).path
        let expected = suite.library + "/" + CaptureSources.albumFolder + "/Holiday 2026/" + lamp.originalKey + ".jpg"
        #expect(saved == CaptureTests.realPath(expected))
        #expect(try Data(contentsOf: URL(fileURLWithPath: saved)) == Data(try Fixtures.orientationPhoto("Landscape_1.jpg")))
        // A second save of the same image finds the file there, and leaves it as it is.
        try Data("mine".utf8).write(to: URL(fileURLWithPath: saved))
        do {
            _ = try await suite.items.call(CaptureServiceRPC.saveToAlbum, save, options: .init(retry: .none))
            Issue.record("SaveToAlbum wrote over a file")
        } catch {
            #expect(error.code == .alreadyExists && error.message.contains("never overwrites"), "\(error)")
        }
        #expect(try String(contentsOfFile: saved, encoding: .utf8) == "mine")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: (saved as NSString).deletingLastPathComponent)
        #expect(leftovers == [lamp.originalKey + ".jpg"], "no partial file stays: \(leftovers)")
        for (album, code) in [("../outside", StatusCode.invalidArgument), ("/tmp", .invalidArgument)] {
            save.album = album
            do {
                _ = try await suite.items.call(CaptureServiceRPC.saveToAlbum, save, options: .init(retry: .none))
                Issue.record("album \(album) was accepted")
            } catch {
                #expect(error.code == code, "\(album): \(error)")
            }
        }
        save.album = ""
        save.imageKey = UUID().uuidString
        do {
            _ = try await suite.items.call(CaptureServiceRPC.saveToAlbum, save, options: .init(retry: .none))
            Issue.record("an unknown image was saved")
        } catch {
            #expect(error.code == .notFound, "\(error)")
        }
    }

    static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    @Test func sourcesThatAreNotConfiguredAreListedAsSuchAndRefused() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let items = try harness.client(.itemService)
        defer { items.close() }
        let sources = try await items.call(CaptureServiceRPC.listSources, ListSourcesRequest()).sources
        #expect(sources.map(\.type) == [.upload, .library, .recent, .camera])
        #expect(sources.map(\.available) == [true, false, false, false])
        #expect(sources[0].mediaTypes == [.image, .movie] && sources[3].mediaTypes.isEmpty)
        #expect(sources[3].description.contains("--camera"))
        var create = CreateItemRequest()
        create.name = "Chair"
        let item = try await items.call(ItemServiceRPC.createItem, create).key
        for source in [CaptureSourceType.camera, .library, .recent] {
            var request = CaptureRequest()
            request.itemKey = item
            request.source = source
            request.sourcePath = source == .library ? "a.jpg" : ""
            do {
                _ = try await items.call(CaptureServiceRPC.capture, request, options: .init(retry: .none))
                Issue.record("capture from \(source.rawValue) was accepted with no such source")
            } catch {
                #expect(error.code == .failedPrecondition && error.message.contains("configured"), "\(error)")
            }
        }
    }

    /// Waits (30 s at most) until `list` is empty.
    static func eventuallyEmptyImpl(_ list: () async throws -> [ImageInfo]) async throws {
        let end = monotonicMilliseconds() + 30_000
        var last: [ImageInfo] = []
        while monotonicMilliseconds() < end {
            last = try await list()
            if last.isEmpty { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("still there after 30 s: \(last.map(\.key))")
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
    try await CaptureTests.eventuallyEmptyImpl(list)
}
