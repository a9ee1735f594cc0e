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

/// Capture refuses what it cannot take, with a precise code, storing nothing and living on:
/// bad sources and photos end their job FAILED, bad requests are refused before any job.
@Suite struct CaptureInputTests {
    @Test func badSourcesEndTheJobFailedWithAPreciseCodeAndStoreNothing() async throws {
        let suite = try await CaptureSuite(cameraTimeoutMilliseconds: 500)
        defer { suite.stop() }
        let lamp = try Fixtures.orientationPhoto("Landscape_1.jpg")
        try Data(Array(lamp.prefix(lamp.count / 2))).write(to: URL(fileURLWithPath: suite.library + "/truncated.jpg"))
        try Data().write(to: URL(fileURLWithPath: suite.library + "/empty.jpg"))
        try "hello".write(toFile: suite.library + "/text.jpg", atomically: true, encoding: .utf8)
        try Data(CaptureSamples.claiming(width: 65000, height: 65000, lamp)).write(to: URL(fileURLWithPath: suite.library + "/huge.jpg"))
        try FileManager.default.createSymbolicLink(atPath: suite.library + "/escape.jpg", withDestinationPath: "/etc/passwd")
        try FileManager.default.createSymbolicLink(atPath: suite.library + "/inside.jpg", withDestinationPath: suite.library + "/trip/lamp.jpg")
        #expect(mkfifo(suite.library + "/fifo.jpg", 0o644) == 0)
        let cases: [(String, Int32, String)] = [
            ("truncated.jpg", 3, "not a photo"),
            ("empty.jpg", 3, "empty"),
            ("text.jpg", 3, "not a photo"),
            ("huge.jpg", 3, "65000"),
            ("escape.jpg", 7, "symlink"),
            ("missing.jpg", 5, "no file"),
            ("trip", 3, "not a regular file"),
            ("fifo.jpg", 3, "not a regular file"),
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
        let suite = try await CaptureSuite()
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

    @Test func aCaptureThatWouldOverfillItsItemFailsWithNothingStored() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        // 99 photos: room for an original, not for an original and its edit.
        for index in 0..<99 {
            var put = PutImageRequest()
            put.ownerKey = suite.item
            put.data = CaptureSamples.tinyJPEG(index)
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

    @Test func everyOddRealPhotoIsCapturedWithAnEditOrRefusedWithCode3AndTheWorkerGoesOn() async throws {
        let suite = try await CaptureSuite()
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
}
