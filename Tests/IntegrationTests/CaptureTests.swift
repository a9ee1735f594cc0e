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

/// Capture end to end: item-service's CaptureService and `capture` queue, a capture worker
/// obtaining the photo from each source and storing it through image-service, over real
/// sockets, with a real photo library folder and a real camera command (`CaptureSuite`).
@Suite struct CaptureTests {
    @Test func eachSourceEndToEndStoresTheOriginalUntouchedAndAttachesIt() async throws {
        let suite = try await CaptureSuite()
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
        let suite = try await CaptureSuite()
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
        let dated = CaptureSamples.withDateTimeOriginal("2031:01:02 03:04:05", try Fixtures.orientationPhoto("Landscape_7.jpg"))
        #expect(EXIF.dateTimeOriginal(in: dated) == "2031:01:02 03:04:05")
        try Data(dated).write(to: URL(fileURLWithPath: folder + "/dated.jpg"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -365 * 86_400)], ofItemAtPath: folder + "/dated.jpg")
        let byExif = try await suite.capture { $0.source = .recent }
        #expect(try await suite.info(byExif.originalKey).checksum == SHA256.checksum(dated), "\(byExif.error)")
    }

    @Test func theSamePhotoTwiceIsStoredOnceAndTheSecondJobNamesTheFirst() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        let first = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        let again = try await suite.capture { $0.source = .upload; $0.data = try! Fixtures.orientationPhoto("Landscape_1.jpg") }
        #expect(first.state == .done && !first.duplicate)
        #expect(again.state == .done && again.duplicate && again.originalKey == first.originalKey, "\(again.error)")
        #expect(try await suite.getItem().photoKeys == [first.originalKey])
        #expect(try await suite.imagesOf(suite.item).map(\.key) == [first.originalKey])
    }

    @Test func anItemDeletedWhileItsCaptureRunsKeepsNoImage() async throws {
        let suite = try await CaptureSuite()
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

    @Test func aHundredMebibyteMovieGoesInWholeThroughAChunkedUploadWithItsChecksum() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        let movie = CaptureSamples.movie(count: 100 << 20, seed: 13)
        let checksum = SHA256.checksum(movie)
        let stored = try await suite.upload(movie, owner: suite.item, mediaType: .movie)
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

    @Test func saveToAlbumWritesOnlyWhereAllowedAndNeverOverAFile() async throws {
        let locked = try await CaptureSuite()
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

        let suite = try await CaptureSuite(albumWritable: true)
        defer { suite.stop() }
        let lamp = try await suite.capture { $0.source = .library; $0.sourcePath = "trip/lamp.jpg" }
        save.imageKey = lamp.originalKey
        save.album = "Holiday 2026"
        let saved = try await suite.items.call(CaptureServiceRPC.saveToAlbum, save, options: .init(retry: .none)).path
        let expected = suite.library + "/" + CaptureSources.albumFolder + "/Holiday 2026/" + lamp.originalKey + ".jpg"
        #expect(saved == CaptureSources.realPath(expected))
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
}
