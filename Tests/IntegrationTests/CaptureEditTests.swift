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

/// A capture's edit end to end: stored as EDITED beside the untouched original, checked by
/// its pixels.
@Suite struct CaptureEditTests {
    @Test func editsAreStoredAsEditedBesideTheUntouchedOriginalCheckedByTheirPixels() async throws {
        let suite = try await CaptureSuite()
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
        #expect(CaptureSamples.meanDifference(crop, upright.cropped(x: 100, y: 50, width: 400, height: 300)) < 4)

        // On the MCU grid, a crop alone is made on the DCT coefficients: the same pixels, not a
        // re-encode (one at quality 90 differs by a level or more almost everywhere).
        let aligned = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(160, 96, 320, 240) }
        #expect(aligned.duplicate && aligned.originalKey == cropped.originalKey, "the same bytes again are that photo")
        let exact = try await pixels(aligned.editedKey)
        let reference = upright.cropped(x: 160, y: 96, width: 320, height: 240)
        #expect(CaptureSamples.meanDifference(exact.cropped(x: 1, y: 1, width: 318, height: 238), reference.cropped(x: 1, y: 1, width: 318, height: 238)) == 0)

        // EXIF 6: the crop is in upright coordinates (the stored pixels are turned).
        let turned = try await suite.capture {
            $0.source = .upload; $0.data = try! Fixtures.orientationPhoto("Landscape_6.jpg"); $0.edit = edit(300, 200, 600, 400)
        }
        let turnedCrop = try await pixels(turned.editedKey)
        #expect((turnedCrop.width, turnedCrop.height) == (600, 400))
        let difference = CaptureSamples.meanDifference(turnedCrop, upright.cropped(x: 300, y: 200, width: 600, height: 400))
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
        #expect(CaptureSamples.meanDifference(circle.cropped(x: 200, y: 200, width: 200, height: 200), upright.cropped(x: 800, y: 500, width: 200, height: 200)) < 4)
        let zoom = try await suite.capture { $0.source = .upload; $0.data = lamp; $0.edit = edit(400, 200, 800, 600, scale: 2) }
        let zoomed = try await pixels(zoom.editedKey)
        #expect((zoomed.width, zoomed.height) == (800, 600))
        let middle = upright.cropped(x: 600, y: 350, width: 400, height: 300).resized(width: 800, height: 600)
        #expect(CaptureSamples.meanDifference(zoomed, middle) < 6, "zoom 2 shows the middle half of the crop, magnified")
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

    @Test func aLibraryPhotoOverThirtyTwoMebibytesIsEditedAndStoredWhole() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        // The lamp with 40 MiB of XMP before its frame header: read whole only in its slot
        // (weighed as the whole budget: its header is past the first MiB), stored from the file.
        let padded = JPEGSplice.inserting(JPEGSplice.metadata(totalBytes: 40 << 20), beforeFrameOf: try Fixtures.orientationPhoto("Landscape_1.jpg"))
        try Data(padded).write(to: URL(fileURLWithPath: suite.library + "/trip/padded.jpg"))
        var square = Edit()
        square.shape = .square
        let job = try await suite.capture { [square] in $0.source = .library; $0.sourcePath = "trip/padded.jpg"; $0.edit = square }
        #expect(job.state == .done && !job.duplicate, "\(job.error)")
        #expect(SHA256.checksum(try await suite.bytes(of: job.originalKey)) == SHA256.checksum(padded))
        let edited = try await suite.info(job.editedKey)
        #expect((edited.width, edited.height) == (1200, 1200) && edited.parentKey == job.originalKey)
        #expect(try await suite.getItem().photoKeys == [job.originalKey, job.editedKey])
    }

    /// An edit keeps no EXIF (its output is made without the original's metadata), and the
    /// thumbnail worker's thumbnails none either: both carry the original's `taken_at`.
    @Test func theEditAndTheThumbnailsOfADatedPhotoWereTakenWhenItWas() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        try suite.harness.start(.thumbnailWorker)
        let dated = EXIFSamples.inserting(
            EXIFSamples.app1([EXIFSamples.dateTimeOriginal("2023:08:15 17:45:30"), EXIFSamples.offsetTimeOriginal("-04:00")]),
            into: try Fixtures.orientationPhoto("Landscape_1.jpg"))
        var crop = Edit()
        (crop.cropX, crop.cropY, crop.cropWidth, crop.cropHeight) = (100, 50, 400, 300)
        let job = try await suite.capture { [crop] in $0.source = .upload; $0.data = dated; $0.edit = crop }
        #expect(job.state == .done && !job.editedKey.isEmpty, "\(job.error)")
        let original = try await suite.info(job.originalKey), edited = try await suite.info(job.editedKey)
        #expect(original.takenAt == "2023-08-15T17:45:30-04:00")
        let editedBytes = try await suite.bytes(of: job.editedKey)
        #expect(edited.kind == .edited && EXIF.takenAt(in: editedBytes) == nil)
        #expect(edited.takenAt == original.takenAt)
        // Every thumbnail the worker makes of either.
        var list = ListImagesRequest()
        list.ownerKey = suite.item
        list.kind = .thumbnail
        list.pageSize = 1000
        let end = ContinuousClock.now + .seconds(60)
        var thumbnails: [ImageInfo] = []
        while ContinuousClock.now < end {
            thumbnails = try await suite.images.call(ImageServiceRPC.listImages, list).images
            if Set(thumbnails.map(\.parentKey)) == [job.originalKey, job.editedKey] { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(Set(thumbnails.map(\.parentKey)) == [job.originalKey, job.editedKey], "\(thumbnails.map(\.parentKey))")
        #expect(thumbnails.allSatisfy { $0.takenAt == original.takenAt }, "\(thumbnails.map(\.takenAt))")
    }
}
