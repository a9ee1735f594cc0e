import Foundation
@testable import JPEG
import Testing
import TestSupport

/// HEIC originals: made at test time by heif-enc from the repository's photos, decoded upright
/// by their irot/imir (every EXIF-equivalent orientation, checked by pixels) with their EXIF
/// Orientation ignored, thumbnailed with their ICC profile and no EXIF, and hostile files
/// refused from their boxes or their data, each with what was wrong.
@Suite("HEIF")
struct HEIFTests {
    /// The upright scene (Landscape_1.jpg) at `width` × `height`.
    static func uprightReference(width: Int, height: Int) throws -> RGBImage {
        try JPEG.decode(TestImages.photo("Landscape_1.jpg")).resized(width: width, height: height)
    }

    /// The HEIFError `body` threw; nil when it threw none (or another error).
    func error(_ body: () throws -> Void) -> HEIFError? {
        do {
            try body()
            return nil
        } catch {
            return error as? HEIFError
        }
    }

    @Test("a HEIC of each EXIF orientation, its irot/imir added, decodes upright (by pixels), its EXIF Orientation ignored", arguments: 1...8)
    func orientation(_ exif: Int) throws {
        // Landscape_n.jpg's pixels are stored turned so that EXIF n shows them upright;
        // heif-enc keeps them as stored and copies the EXIF (Orientation n still in it).
        let plain = try TestHEICs.encode(jpegFile: Fixtures.orientationFolder.appendingPathComponent("Landscape_\(exif).jpg"))
        let heic = try TestHEICs.oriented(plain, TestHEICs.transforms(forEXIF: exif))
        let decoded = try HEIF.decode(heic)
        #expect(decoded.header.width == 1800 && decoded.header.height == 1200, "\(decoded.header)")
        #expect(decoded.image.width == 1800 && decoded.image.height == 1200)
        let small = decoded.image.resized(width: 90, height: 60)
        let reference = try Self.uprightReference(width: 90, height: 60)
        let upright = TestImages.meanAbsoluteDifference(small, reference)
        #expect(upright < 8, "EXIF \(exif): mean difference \(upright) from the upright scene")
        // The same scene mirrored or turned over is far from it: the comparison tells them apart.
        for wrong in [2, 3, 4] {
            let other = TestImages.meanAbsoluteDifference(small, reference.oriented(wrong))
            #expect(other > 4 * max(upright, 2), "EXIF \(exif): as close to the scene oriented \(wrong) (\(other)) as upright (\(upright))")
        }
    }

    @Test("a HEIC with EXIF Orientation 6 and no irot decodes as stored: MIAF says the EXIF tag is ignored")
    func exifOrientationIgnored() throws {
        let heic = try TestHEICs.encode(jpegFile: Fixtures.orientationFolder.appendingPathComponent("Landscape_6.jpg"))
        let decoded = try HEIF.decode(heic)
        #expect(decoded.image.width == 1200 && decoded.image.height == 1800)
        let stored = try JPEG.decode(TestImages.photo("Landscape_6.jpg")).resized(width: 60, height: 90)
        #expect(TestImages.meanAbsoluteDifference(decoded.image.resized(width: 60, height: 90), stored) < 8)
    }

    @Test("thumbnails of a HEIC: upright sizes, its ICC profile kept, no EXIF")
    func thumbnails() throws {
        let heic = try TestHEICs.oriented(
            try TestHEICs.encode(jpegFile: Fixtures.orientationFolder.appendingPathComponent("Portrait_8.jpg")), TestHEICs.transforms(forEXIF: 8))
        let outputs = try Thumbnailer().thumbnails(ofHEIF: heic, sizes: [Thumbnailer.Target(longestEdge: 256), Thumbnailer.Target(longestEdge: 64)])
        let big = try JPEG.header(of: outputs[0].data)
        #expect(big.width == 171 && big.height == 256 && big.orientation == 1)
        #expect(try JPEG.header(of: outputs[1].data).height == 64)
        #expect(!TestImages.headerSegments(of: outputs[0].data).contains { $0.marker == 0xE1 }, "an APP1 (EXIF/XMP) in the thumbnail")
        let reference = try JPEG.decode(TestImages.photo("Portrait_1.jpg")).resized(width: 40, height: 60)
        #expect(TestImages.meanAbsoluteDifference(try JPEG.decode(outputs[0].data).resized(width: 40, height: 60), reference) < 10)

        let profiled = try TestHEICs.encode(jpegFile: Fixtures.pillowFolder.appendingPathComponent("icc_profile_big.jpg"))
        let source = try #require(TestImages.iccProfile(of: try TestImages.pillow("icc_profile_big.jpg")))
        #expect(try HEIF.header(of: profiled).hasICCProfile)
        let thumbnail = try Thumbnailer().thumbnails(ofHEIF: profiled, sizes: [Thumbnailer.Target(longestEdge: 100)])[0].data
        #expect(TestImages.iccProfile(of: thumbnail) == source)
        #expect(TestImages.iccProfile(of: try Thumbnailer().thumbnails(ofHEIF: heic, sizes: [Thumbnailer.Target(longestEdge: 100)])[0].data) == nil)
    }

    @Test("when a HEIC was taken comes from its Exif item")
    func takenAt() throws {
        let jpeg = EXIFSamples.inserting(
            EXIFSamples.app1([EXIFSamples.dateTimeOriginal("2024:05:07 09:33:04"), EXIFSamples.offsetTimeOriginal("+08:00")]),
            into: try TestImages.pillow("hopper.jpg"))
        let heic = try TestHEICs.encode(jpeg: jpeg)
        #expect(heic.withUnsafeBytes { HEIF.takenAt(in: $0) } == "2024-05-07T09:33:04+08:00")
        let none = try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
        #expect(none.withUnsafeBytes { HEIF.takenAt(in: $0) } == nil)
    }

    @Test("a HEIC claiming 100000×100000 is refused from its ispe, naming the size and the limit")
    func tooManyPixels() throws {
        let heic = try TestHEICs.claiming(try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg")), width: 100_000, height: 100_000)
        let refused = try #require(error { _ = try HEIF.header(of: heic) })
        #expect(refused.kind == .tooManyPixels(width: 100_000, height: 100_000, limit: 100_000_000), "\(refused)")
        #expect(refused.message.contains("100000×100000"))
        let workingBytes = error { _ = try Thumbnailer().workingBytes(ofHEIF: heic, sizes: [Thumbnailer.Target(longestEdge: 64)]) }
        #expect(workingBytes?.kind == refused.kind)
    }

    @Test("a HEIC whose decode would hold more than the byte limit is refused before decoding")
    func tooManyBytes() throws {
        let heic = try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
        let refused = try #require(error { _ = try HEIF.validate(heic, options: DecodeOptions(maxDecodedBytes: 128 * 128 * 8 - 1)) })
        #expect(refused.kind == .tooManyBytes(width: 128, height: 128, bytes: 128 * 128 * 8, limit: 128 * 128 * 8 - 1), "\(refused)")
        #expect(try HEIF.validate(heic, options: DecodeOptions(maxDecodedBytes: 128 * 128 * 8)).width == 128)
        #expect(try Thumbnailer().workingBytes(ofHEIF: heic, sizes: [Thumbnailer.Target(longestEdge: 64)]) == 128 * 128 * 8 + 64 * 64 * 11)
    }

    @Test("a truncated HEIC, garbage after its ftyp, and what is not a HEIC are refused with what is wrong")
    func hostile() throws {
        let heic = try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
        #expect(try HEIF.validate(heic).width == 128)
        // Cut inside the coded data: the boxes read, the decode does not.
        let cut = Array(heic.prefix(heic.count - 400))
        let truncated = try #require(error { _ = try HEIF.validate(cut) })
        #expect(truncated.kind == .truncated || truncated.kind == .corrupt, "\(truncated)")
        #expect(!truncated.message.isEmpty)
        // Cut inside the meta box.
        let early = try #require(error { _ = try HEIF.header(of: Array(heic.prefix(200))) })
        #expect(early.kind == .truncated || early.kind == .corrupt, "\(early)")
        // Garbage after the ftyp box.
        let ftypSize = Int(heic[3])
        var garbage = Array(heic.prefix(ftypSize))
        var generator = SplitMix64(seed: 31)
        garbage += (0..<4000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let damaged = try #require(error { _ = try HEIF.validate(garbage) })
        #expect(damaged.kind == .corrupt || damaged.kind == .truncated, "\(damaged)")
        let notHEIF = try #require(error { _ = try HEIF.header(of: try TestImages.pillow("hopper.jpg")) })
        #expect(notHEIF.kind == .notHEIF)
    }
}
