import Digest
import Foundation
import JPEG
import Proto
import RPC
import Testing
import TestSupport

/// A HEIC captured end to end: stored untouched as the ORIGINAL; with an edit, the edit made
/// from its upright pixels (its irot applied, its EXIF Orientation ignored) and stored as an
/// EDITED JPEG, checked by its pixels.
@Suite struct CaptureHEICTests {
    @Test func aHEICIsStoredAsItIsAndItsEditIsAnUprightJPEGCheckedByItsPixels() async throws {
        let suite = try await CaptureSuite()
        defer { suite.stop() }
        // Landscape_6.jpg's turned pixels, with the irot that shows them upright (its EXIF 6 kept).
        let heic = try TestHEICs.oriented(
            TestHEICs.encode(jpegFile: Fixtures.orientationFolder.appendingPathComponent("Landscape_6.jpg")), TestHEICs.transforms(forEXIF: 6))
        let upright = try JPEG.decode(Fixtures.orientationPhoto("Landscape_1.jpg"))
        var crop = Edit()
        (crop.cropX, crop.cropY, crop.cropWidth, crop.cropHeight) = (300, 200, 600, 400)
        let edited = try await suite.capture { $0.source = .upload; $0.data = heic; $0.edit = crop }
        #expect(edited.state == .done && !edited.editedKey.isEmpty, "\(edited.error)")
        let original = try await suite.info(edited.originalKey)
        #expect(original.contentType == "image/heic" && original.checksum == SHA256.checksum(heic) && original.width == 1800)
        let editedInfo = try await suite.info(edited.editedKey)
        #expect(editedInfo.kind == .edited && editedInfo.contentType == "image/jpeg" && (editedInfo.width, editedInfo.height) == (600, 400))
        var get = GetImageRequest()
        get.key = edited.editedKey
        let data = try await suite.images.call(ImageServiceRPC.getImage, get).data
        #expect(EXIF.orientation(in: data) == nil)
        let pixels = try JPEG.decode(data)
        let difference = CaptureSamples.meanDifference(pixels, upright.cropped(x: 300, y: 200, width: 600, height: 400))
        #expect(difference < 12, "the HEIC's crop differs from the upright photo's by \(difference) a sample")

        // Without an edit it is stored as it is, and nothing else.
        let plain = try TestHEICs.encode(jpegFile: Fixtures.pillowFolder.appendingPathComponent("hopper.jpg"))
        let stored = try await suite.capture { $0.source = .upload; $0.data = plain }
        #expect(stored.state == .done && stored.editedKey.isEmpty, "\(stored.error)")
        let info = try await suite.info(stored.originalKey)
        #expect(info.contentType == "image/heic" && info.checksum == SHA256.checksum(plain))

        // A HEIC that does not decode fails the capture, saying so.
        let broken = try await suite.capture { $0.source = .upload; $0.data = Array(plain.prefix(plain.count - 300)) }
        #expect(broken.state == .dead && broken.errorCode == 3 && broken.error.contains("HEIC"), "\(broken.errorCode) \(broken.error)")
    }
}
