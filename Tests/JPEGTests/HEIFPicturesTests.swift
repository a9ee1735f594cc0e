import Foundation
@testable import JPEG
import Testing
import TestSupport

/// The pictures a HEIC's HEVC parameter sets declare: read from `hvcC` and from an item's own
/// data as libheif hands them to libde265, checked against the limits when larger than the
/// `ispe` (libde265 allocates what the SPS says), and an image item of two pictures refused.
/// The hostile files are heif-enc's with their SPS rewritten at test time.
@Suite("HEIF pictures")
struct HEIFPicturesTests {
    /// The HEIFError `body` threw; nil when it threw none (or another error).
    func error(_ body: () throws -> Void) -> HEIFError? { thrown(HEIFError.self, by: body) }

    /// heif-enc's HEIC of hopper.jpg (128×128): ftyp, meta (its iloc version 0 with 4-byte
    /// offsets and lengths, one item of one extent, in mdat), mdat.
    static func hopper() throws -> [UInt8] {
        try TestHEICs.encode(jpeg: try TestImages.pillow("hopper.jpg"))
    }

    /// A box found by its path of types from the top (each `meta` a full box).
    static func box(_ path: [String], in data: [UInt8]) throws -> HEIFCanvas.Box {
        try data.withUnsafeBytes { bytes in
            var range = 0..<bytes.count
            var found: HEIFCanvas.Box?
            for type in path {
                let next = HEIFCanvas.boxes(in: bytes, range).first { $0.type == type }
                found = try #require(next, "no \(type) box in \(path)")
                range = found!.body
                if type == "meta" { range = (range.lowerBound + 4)..<range.upperBound }
            }
            return try #require(found)
        }
    }

    /// Where heif-enc's single item's base offset is in its `iloc` (its one extent's offset
    /// and length follow the extent count after it).
    static func baseField(_ heic: [UInt8]) throws -> Int {
        let iloc = try box(["meta", "iloc"], in: heic).body.lowerBound
        #expect(heic[iloc] == 0 && heic[iloc + 4] == 0x44 && heic[iloc + 5] == 0x40, "iloc v0, 4-byte offsets, lengths and base offsets")
        // version and flags, sizes, item count, item ID, data reference; then base, extent count.
        #expect(Self.read16(heic, iloc + 6) == 1 && Self.read16(heic, iloc + 16) == 1, "one item of one extent")
        return iloc + 12
    }

    /// The item's data (its single extent).
    static func itemData(_ heic: [UInt8]) throws -> [UInt8] {
        let base = try baseField(heic)
        let offset = Self.read32(heic, base) + Self.read32(heic, base + 6), length = Self.read32(heic, base + 10)
        return Array(heic[offset..<(offset + length)])
    }

    /// `heic` with its item's data replaced by `data`, in a second `mdat` at the end.
    static func withItemData(_ heic: [UInt8], _ data: [UInt8]) throws -> [UInt8] {
        let base = try baseField(heic)
        var out = heic + Self.u32(8 + data.count) + Array("mdat".utf8) + data
        Self.write32(&out, base, heic.count + 8)
        Self.write32(&out, base + 6, 0)
        Self.write32(&out, base + 10, data.count)
        return out
    }

    /// The SPS unit of heif-enc's `hvcC`.
    static func sps(_ heic: [UInt8]) throws -> [UInt8] {
        let hvcC = try box(["meta", "iprp", "ipco", "hvcC"], in: heic)
        let units = heic.withUnsafeBytes { HEIFPictures.configurationUnits($0, hvcC.body) }
        return try #require(units.first { $0[0] >> 1 & 0x3F == 33 })
    }

    /// `heic` with the SPS in its `hvcC` replaced by `sps`: the boxes that hold it grow, and
    /// the item's offset into `mdat` (after them) moves by as much.
    static func withConfigurationSPS(_ heic: [UInt8], _ sps: [UInt8]) throws -> [UInt8] {
        let old = try Self.sps(heic)
        let hvcC = try box(["meta", "iprp", "ipco", "hvcC"], in: heic)
        let at = try #require((hvcC.body.lowerBound..<(hvcC.body.upperBound - old.count)).first { Array(heic[$0..<($0 + old.count)]) == old })
        #expect(Self.read16(heic, at - 2) == old.count)
        let delta = sps.count - old.count
        var out = Array(heic[..<(at - 2)]) + [UInt8(sps.count >> 8), UInt8(sps.count & 0xFF)] + sps + heic[(at + old.count)...]
        for path in [["meta"], ["meta", "iprp"], ["meta", "iprp", "ipco"], ["meta", "iprp", "ipco", "hvcC"]] {
            let start = try box(path, in: heic).body.lowerBound - 8
            Self.add32(&out, start, delta)
        }
        Self.add32(&out, try baseField(heic), delta)
        return out
    }

    /// `sps` declaring `width` × `height`: its two exp-Golomb numbers rewritten, the bits after
    /// them kept, realigned and escaped again.
    static func resized(_ sps: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let found = try #require(HEIFPictures.parse(sps: sps))
        let payload = HEIFPictures.unescaped(sps.dropFirst(2))
        var bits: [Bool] = []
        for byte in payload { for shift in (0..<8).reversed() { bits.append(byte >> UInt8(shift) & 1 == 1) } }
        let stop = try #require(bits.lastIndex(of: true), "rbsp_stop_one_bit")
        func golomb(_ value: Int) -> [Bool] {
            let coded = value + 1, length = coded.bitWidth - coded.leadingZeroBitCount
            return Array(repeating: false, count: length - 1) + (0..<length).map { coded >> (length - 1 - $0) & 1 == 1 }
        }
        var out = Array(bits[..<found.bits.lowerBound])
        out += golomb(width) + golomb(height)
        out += bits[found.bits.upperBound..<stop]
        out.append(true)
        while out.count % 8 != 0 { out.append(false) }
        var bytes: [UInt8] = []
        for start in stride(from: 0, to: out.count, by: 8) {
            bytes.append(out[start..<(start + 8)].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) })
        }
        var escaped: [UInt8] = [], zeros = 0
        for byte in bytes {
            if zeros >= 2, byte <= 3 {
                escaped.append(3)
                zeros = 0
            }
            escaped.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return Array(sps.prefix(2)) + escaped
    }

    /// A unit after its 4-byte length, as an item's data holds it.
    static func lengthPrefixed(_ unit: [UInt8]) -> [UInt8] { u32(unit.count) + unit }

    @Test("heif-enc's HEIC declares its ispe in its SPS, read from hvcC and unchanged when the item's data repeats it")
    func readsTheSize() throws {
        let heic = try Self.hopper()
        #expect(HEIFPictures.pictureSize(sps: try Self.sps(heic)).map { [$0.width, $0.height] } == [128, 128])
        #expect(heic.withUnsafeBytes { HEIFPictures.of($0) } == .largest(width: 128, height: 128))
        // The same SPS in band, before the slice: still one picture of 128×128.
        let inBand = try Self.withItemData(heic, Self.lengthPrefixed(try Self.sps(heic)) + Self.itemData(heic))
        #expect(inBand.withUnsafeBytes { HEIFPictures.of($0) } == .largest(width: 128, height: 128))
        // A rewrite to the same size gives the same SPS back (the rewriter is exact).
        #expect(try Self.resized(try Self.sps(heic), width: 128, height: 128) == (try Self.sps(heic)))
        // Photos of other sizes made HEICs: the SPS is the ispe, or up to 7 more (padded to whole coding blocks).
        for name in ["Landscape_1.jpg", "Landscape_6.jpg"] {
            let photo = try TestHEICs.encode(jpeg: try TestImages.photo(name))
            let ispe = try TestHEICs.ispe(photo)
            guard case .largest(let width, let height) = photo.withUnsafeBytes({ HEIFPictures.of($0) }) else {
                Issue.record("\(name): no SPS read")
                continue
            }
            #expect((ispe.width..<(ispe.width + 8)).contains(width) && (ispe.height..<(ispe.height + 8)).contains(height), "\(name): SPS \(width)×\(height), ispe \(ispe)")
        }
    }

    @Test("an SPS in the item's data declaring 16384×16384 under an ispe of 128×128 is refused before decoding")
    func inBandSPS() throws {
        let heic = try Self.hopper()
        let huge = try Self.resized(try Self.sps(heic), width: 16384, height: 16384)
        #expect(HEIFPictures.pictureSize(sps: huge).map { [$0.width, $0.height] } == [16384, 16384])
        let hostile = try Self.withItemData(heic, Self.lengthPrefixed(huge) + Self.itemData(heic))
        #expect(hostile.withUnsafeBytes { HEIFPictures.of($0) } == .mismatched(item: 1, ispeWidth: 128, ispeHeight: 128, width: 16384, height: 16384))
        for refusal in [error { _ = try HEIF.validate(hostile) }, error { _ = try HEIF.header(of: hostile) }, error { _ = try HEIF.decode(hostile) }] {
            #expect(refusal?.kind == .corrupt, "\(String(describing: refusal))")
            #expect(refusal?.message == "its image item 1 declares 128×128 (ispe) but its HEVC data codes a picture of 16384×16384")
        }
        #expect(error { _ = try Thumbnailer().workingBytes(ofHEIF: hostile, sizes: [Thumbnailer.Target(longestEdge: 64)]) }?.kind == .corrupt)
    }

    @Test("a picture larger than the ispe by its padding to coding blocks is what the limits weigh")
    func paddedPicture() throws {
        // The ispe rewritten to 100×100: the 128×128 picture is within its padding to 64, so not
        // refused as another picture, and it is what the pixel and byte limits weigh.
        let heic = try TestHEICs.claiming(try Self.hopper(), width: 100, height: 100)
        #expect(heic.withUnsafeBytes { HEIFPictures.of($0) } == .largest(width: 128, height: 128))
        let pixels = error { _ = try HEIF.header(of: heic, options: DecodeOptions(maxPixels: 128 * 128 - 1)) }
        #expect(pixels?.kind == .tooManyPixels(width: 128, height: 128, limit: 128 * 128 - 1), "\(String(describing: pixels))")
        #expect(pixels?.message == "its HEVC data declares a picture of 128×128 pixels (its primary image's ispe says 100×100), over the limit of 16383")
        let bytes = error { _ = try HEIF.validate(heic, options: DecodeOptions(maxDecodedBytes: 128 * 128 * 8 - 1)) }
        #expect(bytes?.kind == .tooManyBytes(width: 128, height: 128, bytes: 128 * 128 * 8, limit: 128 * 128 * 8 - 1), "\(String(describing: bytes))")
        #expect(try HEIF.header(of: heic, options: DecodeOptions(maxPixels: 128 * 128)).codedWidth == 100)
        // Past the padding (ispe 64×64: 128 is more than 64 rounded up to 64), refused.
        let smaller = try TestHEICs.claiming(try Self.hopper(), width: 64, height: 64)
        #expect(smaller.withUnsafeBytes { HEIFPictures.of($0) } == .mismatched(item: 1, ispeWidth: 64, ispeHeight: 64, width: 128, height: 128))
    }

    @Test("an SPS in hvcC declaring a huge picture is refused, for a coded image and for a grid's tiles")
    func configurationSPS() throws {
        let heic = try Self.hopper()
        let hostile = try Self.withConfigurationSPS(heic, try Self.resized(try Self.sps(heic), width: 16384, height: 16384))
        #expect(hostile.withUnsafeBytes { HEIFPictures.of($0) } == .mismatched(item: 1, ispeWidth: 128, ispeHeight: 128, width: 16384, height: 16384))
        #expect(error { _ = try HEIF.validate(hostile) }?.kind == .corrupt)
        // The rewrite itself is sound: at the real size, the file decodes to the same pixels.
        let same = try Self.withConfigurationSPS(heic, try Self.resized(try Self.sps(heic), width: 128, height: 128))
        #expect(try HEIF.decode(same).image == (try HEIF.decode(heic)).image)
        // A grid of one such tile under a canvas and ispe of 128×128 (both checked before), and
        // a grid of 64×64 of them under 8192×8192.
        for side in [1, 64] {
            let size = 128 * side
            let grid = try HEIFTests.grid(of: hostile, width: size, height: size, ispe: (size, size), tiles: (side, side))
            #expect(grid.withUnsafeBytes { HEIFCanvas.of($0) } == .derived(width: size, height: size))
            #expect(grid.withUnsafeBytes { HEIFPictures.of($0) } == .mismatched(item: 1, ispeWidth: 128, ispeHeight: 128, width: 16384, height: 16384))
            let refused = error { _ = try HEIF.validate(grid) }
            #expect(refused?.message == "its image item 1 declares 128×128 (ispe) but its HEVC data codes a picture of 16384×16384", "\(String(describing: refused))")
        }
    }

    @Test("an image item whose data holds two pictures is refused before decoding")
    func twoPictures() throws {
        let heic = try Self.hopper()
        let data = try Self.itemData(heic)
        let twice = try Self.withItemData(heic, data + data)
        #expect(twice.withUnsafeBytes { HEIFPictures.of($0) } == .several(item: 1, pictures: 2))
        let refused = error { _ = try HEIF.validate(twice) }
        #expect(refused?.kind == .corrupt && refused?.message == "its image item 1 holds 2 HEVC pictures, where an image item holds one", "\(String(describing: refused))")
        #expect(try HEIF.validate(try Self.withItemData(heic, data)).width == 128, "the same data once is one picture")
    }

    @Test("items whose data is the same extents are read once; items whose overlapping data adds up to more than twice the file are refused")
    func overlappingItems() throws {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { Self.u32(8 + body.count) + Array(type.utf8) + body }
        func full(_ type: String, _ version: UInt8, _ body: [UInt8]) -> [UInt8] { box(type, [version, 0, 0, 0] + body) }
        // 200 hvc1 items over 4000 bytes of zero-length units, each starting `shift(i)` bytes in.
        func file(shift: (Int) -> Int) -> [UInt8] {
            let count = 200, payload = [UInt8](repeating: 0, count: 4000)
            let infes = (1...count).flatMap { full("infe", 2, u16($0) + u16(0) + Array("hvc1".utf8) + [0]) }
            let iinf = full("iinf", 0, u16(count) + infes)
            func meta(_ mdatData: Int) -> [UInt8] {
                // iloc version 0: 4-byte offsets and lengths, no base offset.
                let entries = (1...count).flatMap { u16($0) + u16(0) + u16(1) + Self.u32(mdatData + shift($0)) + Self.u32(payload.count - shift($0)) }
                return full("meta", 0, full("iloc", 0, [0x44, 0x00] + u16(count) + entries) + iinf)
            }
            let ftyp = box("ftyp", Array("heicmif1".utf8))
            let size = meta(0).count
            return ftyp + meta(ftyp.count + size + 8) + box("mdat", payload)
        }
        let shifted = file { $0 }
        // Refused at the first item that takes the bytes read past twice the file's size.
        guard case .overlapping(let bytes, let fileBytes) = shifted.withUnsafeBytes({ HEIFPictures.of($0) }) else {
            Issue.record("not refused as overlapping")
            return
        }
        #expect(fileBytes == shifted.count && bytes > 2 * fileBytes && bytes <= 2 * fileBytes + 4000, "\(bytes) of \(fileBytes)")
        let header = try HEIF.header(of: try Self.hopper())
        let refused = error { _ = try HEIF.checkLimits(header, canvas: .coded, pictures: shifted.withUnsafeBytes { HEIFPictures.of($0) }, options: DecodeOptions()) }
        #expect(refused?.kind == .corrupt && refused?.message.hasPrefix("its image items' data overlap: ") == true, "\(String(describing: refused))")
        // The same extents for every item: read once, nothing in them.
        let same = file { _ in 0 }
        #expect(same.withUnsafeBytes { HEIFPictures.of($0) } == HEIFPictures.Finding.none)
    }

    @Test("an item's units are read across its extents, each after a 4-byte length; a length past the end stops the reading")
    func streamAcrossExtents() throws {
        let stream: [UInt8] = [0, 0, 0, 3, 0x42, 0x01, 0xAA] + [0, 0, 0, 2, 0x26, 0x01] + [0, 0, 0, 9, 1]
        // In the file, bytes that are not the item's around and inside it: extents 2..<7 and 8..<21.
        let file: [UInt8] = [0xEE, 0xEE] + stream[0..<5] + [0xEE] + stream[5...]
        file.withUnsafeBytes { data in
            var reader = HEIFPictures.Stream(data: data, extents: [2..<7, 8..<21])
            #expect(reader.count == stream.count)
            #expect(reader.next(upTo: 160) == [0x42, 0x01, 0xAA], "a unit split across the two extents")
            #expect(reader.next(upTo: 1) == [0x26], "at most the bytes asked for")
            #expect(reader.next(upTo: 160) == nil, "a length of 9 with 1 byte left")
        }
    }

    // Big-endian fields of the test files.
    static func read16(_ data: [UInt8], _ at: Int) -> Int { Int(data[at]) << 8 | Int(data[at + 1]) }
    static func read32(_ data: [UInt8], _ at: Int) -> Int { read16(data, at) << 16 | read16(data, at + 2) }
    static func write32(_ data: inout [UInt8], _ at: Int, _ value: Int) {
        for index in 0..<4 { data[at + index] = UInt8(value >> (24 - 8 * index) & 0xFF) }
    }
    static func add32(_ data: inout [UInt8], _ at: Int, _ delta: Int) { write32(&data, at, read32(data, at) + delta) }
    static func u32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(value >> (24 - 8 * $0) & 0xFF) } }
}
