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
    func error(_ body: () throws -> Void) -> HEIFError? { thrown(HEIFError.self, by: body) }

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

    /// `heic` (heif-enc's: one `hvc1` item, its `hvcC`, `ispe` and `pixi`, its data in `mdat`)
    /// made the single tile of a 1×1 `grid` primary item whose grid data (in `idat`) declares
    /// an output of `width` × `height` and whose own `ispe` says `ispe`: how phones store
    /// photos (a grid of 512×512 tiles), and how a hostile file declares a canvas its ispe hides.
    /// With `tiles` (rows, columns), every tile is that one item, referenced once for each.
    static func grid(of heic: [UInt8], width: Int, height: Int, ispe: (Int, Int), tiles: (rows: Int, columns: Int) = (1, 1)) throws -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func u32(_ v: Int) -> [UInt8] { u16(v >> 16) + u16(v & 0xFFFF) }
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { u32(8 + body.count) + Array(type.utf8) + body }
        func full(_ type: String, _ version: UInt8, _ body: [UInt8]) -> [UInt8] { box(type, [version, 0, 0, 0] + body) }
        let bytes = heic
        return try bytes.withUnsafeBytes { data in
            let top = HEIFCanvas.boxes(in: data, 0..<data.count)
            let ftyp = try #require(top.first { $0.type == "ftyp" }), meta = try #require(top.first { $0.type == "meta" })
            let mdat = try #require(top.first { $0.type == "mdat" })
            let children = HEIFCanvas.boxes(in: data, (meta.body.lowerBound + 4)..<meta.body.upperBound)
            let iprp = try #require(children.first { $0.type == "iprp" })
            let ipco = try #require(HEIFCanvas.boxes(in: data, iprp.body).first { $0.type == "ipco" })
            func whole(_ box: HEIFCanvas.Box) -> [UInt8] { Array(data[(box.body.lowerBound - 8)..<box.body.upperBound]) }
            let properties = HEIFCanvas.boxes(in: data, ipco.body)
            let hvcC = try #require(properties.first { $0.type == "hvcC" }), tileISPE = try #require(properties.first { $0.type == "ispe" })
            let hdlr = try #require(children.first { $0.type == "hdlr" })
            let gridData: [UInt8] = [0, 0, UInt8(tiles.rows - 1), UInt8(tiles.columns - 1)] + u16(width) + u16(height)
            let ipco2 = box("ipco", whole(hvcC) + whole(tileISPE) + full("ispe", 0, u32(ispe.0) + u32(ispe.1)))
            // Item 1 (the tile, hidden): hvcC (essential) and its ispe; item 2 (the grid): its ispe.
            let ipma = full("ipma", 0, u32(2) + u16(1) + [2, 0x81, 0x02] + u16(2) + [1, 0x03])
            let infe1 = full("infe", 2, u16(1) + u16(0) + Array("hvc1".utf8) + [0])
            let infe2 = full("infe", 2, u16(2) + u16(0) + Array("grid".utf8) + [0])
            let iinf = full("iinf", 0, u16(2) + infe1 + infe2)
            let count = tiles.rows * tiles.columns
            let iref = full("iref", 0, box("dimg", u16(2) + u16(count) + Array([[UInt8]](repeating: u16(1), count: count).joined())))
            let idat = box("idat", gridData)
            func makeMeta(mdatData: Int) -> [UInt8] {
                // iloc version 1: 4-byte offsets, lengths and base offsets, no index.
                let iloc = full("iloc", 1, [0x44, 0x40] + u16(2)
                    + u16(1) + u16(0) + u16(0) + u32(mdatData) + u16(1) + u32(0) + u32(mdat.body.count)
                    + u16(2) + u16(1) + u16(0) + u32(0) + u16(1) + u32(0) + u32(gridData.count))
                return full("meta", 0, whole(hdlr) + full("pitm", 0, u16(2)) + iloc + iinf + iref + idat + box("iprp", ipco2 + ipma))
            }
            let head = whole(ftyp), size = makeMeta(mdatData: 0).count
            return head + makeMeta(mdatData: head.count + size + 8) + whole(mdat)
        }
    }

    @Test("a grid HEIC decodes as its tiles; one whose grid declares a canvas past the limits under a small ispe is refused before decoding")
    func gridCanvas() throws {
        let heic = try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
        let grid = try Self.grid(of: heic, width: 128, height: 128, ispe: (128, 128))
        #expect(grid.withUnsafeBytes { HEIFCanvas.of($0) } == .derived(width: 128, height: 128))
        #expect(heic.withUnsafeBytes { HEIFCanvas.of($0) } == .coded, "a coded image has no canvas")
        let decoded = try HEIF.decode(grid)
        #expect(decoded.image == (try HEIF.decode(heic)).image, "the grid of one tile is that tile")
        #expect(try HEIF.validate(grid).width == 128)
        // 64759×65527 under an ispe of 8×8, as `ops/fuzz heic` found it (libheif allocated
        // the canvas: 4 GB): refused from the boxes by validate, header and decode alike.
        let hostile = try Self.grid(of: heic, width: 64759, height: 65527, ispe: (8, 8))
        for refusal in [error { _ = try HEIF.validate(hostile) }, error { _ = try HEIF.header(of: hostile) }, error { _ = try HEIF.decode(hostile) }] {
            #expect(refusal?.kind == .tooManyPixels(width: 64759, height: 65527, limit: 100_000_000), "\(String(describing: refusal))")
            #expect(refusal?.message == "a grid or overlay in it declares a canvas of 64759×65527 pixels (its primary image's ispe says 8×8), over the limit of 100000000")
        }
        // Within the pixel limit, the canvas is what the byte limit weighs.
        let wide = try Self.grid(of: heic, width: 4000, height: 4000, ispe: (128, 128))
        let bytes = error { _ = try HEIF.validate(wide, options: DecodeOptions(maxDecodedBytes: 64 << 20)) }
        #expect(bytes?.kind == .tooManyBytes(width: 4000, height: 4000, bytes: 4000 * 4000 * 8, limit: 64 << 20), "\(String(describing: bytes))")
    }

    @Test("a grid whose data runs past its idat is measured as libheif reads it, from the bytes after the box; a grid without readable data is refused")
    func gridPastItsIdat() throws {
        // ops/fuzz heic's second finding: the grid item's extent starts 7 bytes into an idat of
        // 8, so libheif 1.15 took its output size from the next box's header (19561×27759).
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus/heic/regressions/oom-d8b2c3676183d8feff6c6c4230bdcc050f118a1e")
        let found = [UInt8](try Data(contentsOf: corpus))
        #expect(found.withUnsafeBytes { HEIFCanvas.of($0) } == .derived(width: 19561, height: 27759))
        let refused = error { _ = try HEIF.validate(found, options: DecodeOptions(maxPixels: 4_000_000)) }
        #expect(refused?.kind == .tooManyPixels(width: 19561, height: 27759, limit: 4_000_000), "\(String(describing: refused))")
        // A grid item whose iloc entry is missing: nothing to measure, so refused.
        let heic = try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
        var grid = try Self.grid(of: heic, width: 128, height: 128, ispe: (128, 128))
        let iloc = try #require(grid.withUnsafeBytes { data in
            HEIFCanvas.boxes(in: data, 0..<data.count).first { $0.type == "meta" }.flatMap { meta in
                HEIFCanvas.boxes(in: data, (meta.body.lowerBound + 4)..<meta.body.upperBound).first { $0.type == "iloc" }
            }
        })
        // Item 2's entry starts after version/flags (4), sizes (2), count (2) and item 1's 20 bytes.
        let entry = iloc.body.lowerBound + 4 + 2 + 2 + 20
        #expect(grid[entry] == 0 && grid[entry + 1] == 2)
        grid[entry + 1] = 9
        #expect(grid.withUnsafeBytes { HEIFCanvas.of($0) } == .unreadable(type: "grid"))
        // libheif may refuse it first, in its own words; either way nothing is decoded.
        #expect(error { _ = try HEIF.header(of: grid) } != nil)
        let header = try HEIF.header(of: heic)
        let unreadable = error { _ = try HEIF.checkLimits(header, canvas: .unreadable(type: "grid"), options: DecodeOptions()) }
        #expect(unreadable?.kind == .corrupt && unreadable?.message == "it has a grid image whose data (its output size) cannot be found or is cut short")
        // ops/fuzz heic's third finding: two meta boxes, the grid's size (64759×65527) in the
        // second. Two of a box a file has once are refused, whichever libheif would read.
        let twice = try Self.grid(of: heic, width: 128, height: 128, ispe: (128, 128))
        let twoMetas = twice + (twice.withUnsafeBytes { data in
            HEIFCanvas.boxes(in: data, 0..<data.count).first { $0.type == "meta" }.map { Array(data[($0.body.lowerBound - 8)..<$0.body.upperBound]) }
        } ?? [])
        #expect(twoMetas.withUnsafeBytes { HEIFCanvas.of($0) } == .duplicated(box: "meta"))
        let duplicated = error { _ = try HEIF.validate(twoMetas) }
        #expect(duplicated != nil, "two meta boxes are refused, by libheif or by the canvas check")
        let third = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus/heic/regressions/oom-884af68f2a45206361f869a9c40b7746548b0772")
        let thirdFinding = [UInt8](try Data(contentsOf: third))
        #expect(thirdFinding.withUnsafeBytes { HEIFCanvas.of($0) } == .duplicated(box: "meta"))
        #expect(error { _ = try HEIF.validate(thirdFinding) }?.message == "it has more than one meta box, which a HEIF file has at most once")
    }

    @Test("every grid in the file counts, not only the primary image; a grid or overlay that takes a derived image as input is refused")
    func derivedAnywhere() throws {
        let heic = try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
        // The primary image made the coded tile (pitm → item 1): the grid (item 2) is no longer
        // primary, and its canvas still counts.
        func patched(_ file: [UInt8], _ type: String, at offset: Int, to value: UInt8) throws -> [UInt8] {
            var out = file
            let box = try #require((0..<(out.count - 4)).first { out[$0..<($0 + 4)].elementsEqual(type.utf8) })
            out[box + 4 + offset] = value
            return out
        }
        let aside = try patched(try Self.grid(of: heic, width: 64759, height: 65527, ispe: (8, 8)), "pitm", at: 5, to: 1)
        #expect(try HEIF.header(of: heic).codedWidth == 128)
        #expect(aside.withUnsafeBytes { HEIFCanvas.of($0) } == .derived(width: 64759, height: 65527))
        let refused = error { _ = try HEIF.validate(aside) }
        #expect(refused?.kind == .tooManyPixels(width: 64759, height: 65527, limit: 100_000_000), "\(String(describing: refused))")
        // The grid its own tile (dimg 2 → 2): libheif would follow it with no end.
        let loop = try patched(try Self.grid(of: heic, width: 128, height: 128, ispe: (128, 128)), "dimg", at: 5, to: 2)
        #expect(loop.withUnsafeBytes { HEIFCanvas.of($0) } == .nested(outer: "grid", inner: "grid"))
        let looped = error { _ = try HEIF.validate(loop) }
        #expect(looped?.kind == .corrupt, "\(String(describing: looped))")
        // ops/fuzz heic's fifth finding: a 63751×1 grid whose one tile is an overlay, decoded
        // into a canvas of its own (libheif allocated 533 MB).
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus/heic/regressions/oom-83b6e69a24e0e4d97a23b92ddada0f48d0a72b6d")
        let found = [UInt8](try Data(contentsOf: corpus))
        #expect(found.withUnsafeBytes { HEIFCanvas.of($0) } == .nested(outer: "grid", inner: "iovl"))
        #expect(error { _ = try HEIF.validate(found) }?.message
            == "it has a grid image that takes another derived image (iovl) as input; only coded images are taken as inputs (libheif follows derived ones with no guard against a loop)")
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
