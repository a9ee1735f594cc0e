/// The pictures a HEIF's HEVC streams declare: each sequence parameter set's
/// `pic_width_in_luma_samples` × `pic_height_in_luma_samples` is what libde265 allocates when it
/// decodes a picture under it, whatever the item's `ispe` says (libheif 1.15 never compares
/// the two, and libde265 takes up to 65535×65535). heif-enc's 4.9 KB HEIC of a 128×128 photo
/// with the SPS in its `hvcC` rewritten to 16384×16384 made `heif-convert` take 1.6 GB and 24 s
/// and write a 16384×16384 PNG; so the limits are checked on the largest picture any SPS in
/// the file declares, when it is larger than the `ispe` or the canvas.
///
/// Where libheif finds SPSs, and so where this looks: the NAL units of every `hvcC` property
/// (libheif puts them before an item's data), and the item data of every `hvc1` item (tiles,
/// alpha planes and thumbnails included), which libheif hands to libde265 as NAL units each
/// after a 4-byte length (whatever `hvcC` says of lengths; libde265 1.0.11 fails to decode
/// after an SPS repeated there, but reads it).
///
/// Per item (its `hvcC` by `ipma`, and its data): an `hvc1` item is one picture, and one whose
/// data starts more (libde265 would decode each in turn, each its own allocation and time) is
/// refused; its picture is its `ispe` padded to whole coding blocks, and one larger is refused,
/// since the limits bound a grid's canvas and each picture, not a tile's picture times the
/// number of tiles: a 5 KB grid of 8×8 tiles each declared 128×128 and coding 4096×4096 made
/// `heif-convert` take 24 s and 380 MB; one of 64×64 such tiles ran past 5 minutes.
enum HEIFPictures {
    /// What the HEVC streams of a file declare.
    enum Finding: Equatable {
        /// No SPS was read.
        case none
        /// The largest picture (by area) an SPS declares.
        case largest(width: Int, height: Int)
        /// An `hvc1` item whose data (with its `hvcC`'s units before it) starts this many pictures.
        case several(item: Int, pictures: Int)
        /// An `hvc1` item whose HEVC data codes a picture larger than its `ispe`, padded to
        /// whole coding blocks: refused, since nothing else bounds what each of a grid's tiles
        /// costs (a grid of tiles declared 128×128 each coding 4096×4096).
        case mismatched(item: Int, ispeWidth: Int, ispeHeight: Int, width: Int, height: Int)
        /// `hvc1` items whose data, each distinct run of extents counted once, is more than
        /// twice the bytes the file holds: refused, since reading it would cost out of
        /// proportion to the file.
        case overlapping(bytes: Int, fileBytes: Int)
    }

    /// The NAL unit type of a sequence parameter set (ITU-T H.265, table 7-1).
    static let spsType = 33
    /// How many bytes of a unit are read: an SPS's picture size comes after at most 111
    /// (its profile, tier and level with six sub-layers, then four exp-Golomb numbers).
    static let headBytes = 160

    /// The pictures `data`'s HEVC streams declare; `.none` when its boxes cannot be followed
    /// (libheif's own parse judges such a file).
    static func of(_ data: UnsafeRawBufferPointer) -> Finding { of(HEIFMeta(data)) }

    /// The pictures the HEVC streams declare, from the file's `meta` read once.
    static func of(_ meta: HEIFMeta) -> Finding {
        let data = meta.data
        var all = Summary()
        // Every SPS of every hvcC counts; the first ipco's properties are what ipma's indices
        // (from 1) name, as libheif reads them. Each is read once, however many items name it.
        var properties: [HEIFCanvas.Box] = []
        var configurations: [Int: Summary] = [:]
        for (iprpIndex, iprp) in meta.children.filter({ $0.type == "iprp" }).enumerated() {
            for (ipcoIndex, ipco) in HEIFCanvas.boxes(in: data, iprp.body).filter({ $0.type == "ipco" }).enumerated() {
                let boxes = HEIFCanvas.boxes(in: data, ipco.body)
                let first = iprpIndex == 0 && ipcoIndex == 0
                if first { properties = boxes }
                for (index, hvcC) in boxes.enumerated() where hvcC.type == "hvcC" {
                    var summary = Summary()
                    for unit in configurationUnits(data, hvcC.body) { summary.add(unit) }
                    all.merge(summary, pictures: false)
                    if first { configurations[index + 1] = summary }
                }
            }
        }
        let associations = meta.first("iprp").flatMap { iprp in
            HEIFCanvas.boxes(in: data, iprp.body).first { $0.type == "ipma" }
        }.map { associationsByItem(data, $0.body) } ?? [:]
        // Items whose data is the same extents are read once; items whose data overlaps in
        // other ways may not read more than twice the bytes the file holds (an extent of length
        // 0 runs to the file's end, over the items after it), or a file of many items each
        // starting a byte further into the same data would cost its length times their number.
        var streams: [[Range<Int>]: Summary] = [:]
        var streamed = 0
        for (item, type) in meta.types where type == "hvc1" && meta.first("iloc") != nil {
            // What libheif hands libde265: the hvcC's units, then the item's data.
            let indices = associations[item] ?? []
            var own = Summary()
            for index in Set(indices) { if let summary = configurations[index] { own.merge(summary) } }
            if let found = meta.extents[item], let ranges = found {
                if streams[ranges] == nil {
                    var stream = Stream(data: data, extents: ranges)
                    streamed += stream.count
                    guard streamed <= 2 * data.count else { return .overlapping(bytes: streamed, fileBytes: data.count) }
                    var summary = Summary()
                    // Counted up to the second picture: enough to refuse.
                    while summary.pictures <= 1, let unit = stream.next(upTo: headBytes) { summary.add(unit) }
                    streams[ranges] = summary
                }
                own.merge(streams[ranges]!)
            }
            if own.pictures > 1 { return .several(item: item, pictures: own.pictures) }
            guard let picture = own.largest else { continue }
            all.merge(own, pictures: false)
            // A coded picture is its ispe, padded to whole coding blocks (64 at most) and cropped
            // by its conformance window: one larger is not this item's picture.
            let ispe = indices.lazy.compactMap { properties.indices.contains($0 - 1) ? imageSpatialExtent(data, properties[$0 - 1]) : nil }.first
            if let ispe, picture.width > (ispe.width + 63) / 64 * 64 || picture.height > (ispe.height + 63) / 64 * 64 {
                return .mismatched(item: item, ispeWidth: ispe.width, ispeHeight: ispe.height, width: picture.width, height: picture.height)
            }
        }
        return all.largest.map { .largest(width: $0.width, height: $0.height) } ?? .none
    }

    /// What a run of NAL units declares: its largest SPS picture and how many pictures it starts.
    struct Summary {
        var largest: (width: Int, height: Int)?
        var pictures = 0

        mutating func add(_ unit: [UInt8]) {
            if let size = pictureSize(of: unit) { largest = HEIFCanvas.larger(largest, size) }
            if startsPicture(unit) { pictures += 1 }
        }

        /// Adds `other`'s pictures (unless `pictures` is false) and its largest picture.
        mutating func merge(_ other: Summary, pictures counted: Bool = true) {
            if let size = other.largest { largest = HEIFCanvas.larger(largest, size) }
            if counted { pictures += other.pictures }
        }
    }

    /// The picture size of a unit that is an SPS; nil for any other.
    static func pictureSize(of unit: [UInt8]) -> (width: Int, height: Int)? {
        guard unit.count > 2, Int(unit[0] >> 1) & 0x3F == spsType else { return nil }
        return pictureSize(sps: unit)
    }

    /// Each item's property indices (from 1, into `ipco`) by an `ipma` box: 16-bit item IDs in
    /// version 0 (32 after), 7-bit indices (15 when its flags' low bit is set). An item listed
    /// twice keeps its first entry.
    static func associationsByItem(_ data: UnsafeRawBufferPointer, _ body: Range<Int>) -> [Int: [Int]] {
        var reader = HEIFCanvas.Reader(data: data, offset: body.lowerBound, end: body.upperBound)
        guard let version = reader.read(1), let flags = reader.read(3), let count = reader.read(4) else { return [:] }
        var found: [Int: [Int]] = [:]
        for _ in 0..<min(count, body.count) {
            guard let item = reader.read(version < 1 ? 2 : 4), let associations = reader.read(1) else { break }
            var indices: [Int] = []
            for _ in 0..<associations {
                guard let value = reader.read(flags & 1 == 1 ? 2 : 1) else { break }
                indices.append(value & (flags & 1 == 1 ? 0x7FFF : 0x7F))
            }
            if found[item] == nil { found[item] = indices }
        }
        return found
    }

    /// The width and height of an `ispe` property (a full box: version and flags, then two
    /// 32-bit numbers); nil for another box, or one too short.
    static func imageSpatialExtent(_ data: UnsafeRawBufferPointer, _ box: HEIFCanvas.Box) -> (width: Int, height: Int)? {
        guard box.type == "ispe", box.body.count >= 12 else { return nil }
        return (HEIFCanvas.number(data, box.body.lowerBound + 4, 4), HEIFCanvas.number(data, box.body.lowerBound + 8, 4))
    }

    /// Whether a NAL unit is the first slice segment of a picture libde265 decodes: a coding
    /// slice (types 0–31) of layer 0 (libde265 drops the others) whose
    /// `first_slice_segment_in_pic_flag` (the first bit after the two-byte header) is set.
    static func startsPicture(_ unit: [UInt8]) -> Bool {
        guard unit.count > 2, unit[0] >> 1 & 0x3F < 32 else { return false }
        let layer = Int(unit[0] & 1) << 5 | Int(unit[1] >> 3)
        return layer == 0 && unit[2] & 0x80 != 0
    }

    /// The NAL units of an `hvcC` box's arrays (ISO/IEC 14496-15, 8.3.3.1): 22 bytes of
    /// configuration, a count of arrays, each a type byte, a count of units, and each unit
    /// after a 2-byte length; the first `headBytes` of each. Stops where they run past the box.
    static func configurationUnits(_ data: UnsafeRawBufferPointer, _ body: Range<Int>) -> [[UInt8]] {
        var reader = HEIFCanvas.Reader(data: data, offset: body.lowerBound, end: body.upperBound)
        reader.offset += 22
        guard let arrays = reader.read(1) else { return [] }
        var units: [[UInt8]] = []
        for _ in 0..<arrays {
            guard reader.read(1) != nil, let count = reader.read(2) else { return units }
            for _ in 0..<count {
                guard let length = reader.read(2), reader.offset + length <= body.upperBound else { return units }
                units.append(Array(data[reader.offset..<(reader.offset + min(length, headBytes))]))
                reader.offset += length
            }
        }
        return units
    }

    /// An item's data across its extents, read as libheif hands it to libde265: NAL units each
    /// after a 4-byte big-endian length.
    struct Stream {
        let data: UnsafeRawBufferPointer
        let extents: [Range<Int>]
        /// Where each extent starts in the item's data.
        let starts: [Int]
        let count: Int
        var offset = 0

        init(data: UnsafeRawBufferPointer, extents: [Range<Int>]) {
            self.data = data
            self.extents = extents
            var starts: [Int] = [], total = 0
            for extent in extents {
                starts.append(total)
                total += extent.count
            }
            self.starts = starts
            self.count = total
        }

        /// The byte at `position` in the item's data (which must be below `count`).
        func byte(at position: Int) -> UInt8 {
            // The last extent starting at or before `position`.
            var low = 0, high = starts.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if starts[middle] <= position { low = middle } else { high = middle - 1 }
            }
            return data[extents[low].lowerBound + position - starts[low]]
        }

        /// The first `limit` bytes of the next unit; nil at the end, or where a length runs
        /// past it (libheif then refuses the item before decoding anything).
        mutating func next(upTo limit: Int) -> [UInt8]? {
            guard count - offset >= 4 else { return nil }
            var length = 0
            for index in 0..<4 { length = length << 8 | Int(byte(at: offset + index)) }
            offset += 4
            guard length <= count - offset else { return nil }
            let head = (0..<min(length, limit)).map { byte(at: offset + $0) }
            offset += length
            return head
        }
    }

    /// The picture size an SPS NAL unit (its two-byte header first) declares, read as libde265
    /// 1.0.11 reads it (`seq_parameter_set_rbsp`, ITU-T H.265 7.3.2.2); nil where libde265
    /// would refuse it before its size (more than 7 sub-layers, an SPS id over 15, a chroma
    /// format over 3, or a size of 0 or over 65535).
    static func pictureSize(sps unit: [UInt8]) -> (width: Int, height: Int)? {
        parse(sps: unit).map { ($0.width, $0.height) }
    }

    /// An SPS's picture size, and where its two numbers are: bits of the payload after the
    /// NAL header with its emulation-prevention bytes taken out (`unescaped`).
    struct PictureSize {
        let width: Int
        let height: Int
        let bits: Range<Int>
    }

    /// `pictureSize`, with where it is.
    static func parse(sps unit: [UInt8]) -> PictureSize? {
        var bits = BitReader(bytes: unescaped(unit.dropFirst(2)))
        _ = bits.read(4)  // sps_video_parameter_set_id
        let subLayers = bits.read(3) + 1
        guard subLayers <= 7 else { return nil }
        _ = bits.read(1)  // sps_temporal_id_nesting_flag
        // profile_tier_level(1, subLayers − 1): the general profile (88 bits) and level (8).
        bits.skip(96)
        var present: [(profile: Bool, level: Bool)] = []
        for _ in 0..<(subLayers - 1) { present.append((bits.read(1) == 1, bits.read(1) == 1)) }
        if subLayers > 1 { bits.skip(2 * (8 - (subLayers - 1))) }
        for layer in present {
            if layer.profile { bits.skip(88) }
            if layer.level { bits.skip(8) }
        }
        guard let id = bits.exponentialGolomb(), id < 16, let chroma = bits.exponentialGolomb(), chroma <= 3 else { return nil }
        if chroma == 3 { _ = bits.read(1) }  // separate_colour_plane_flag
        let start = bits.position
        guard let width = bits.exponentialGolomb(), let height = bits.exponentialGolomb(),
              (1...65535).contains(width), (1...65535).contains(height) else { return nil }
        return PictureSize(width: width, height: height, bits: start..<bits.position)
    }

    /// A unit's payload without its emulation-prevention bytes (each 3 after two zeros).
    static func unescaped(_ payload: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = [], zeros = 0
        out.reserveCapacity(payload.count)
        for byte in payload {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }

    /// Reads bits most significant first; past the end, as libde265's reader does, zeros
    /// (so a unit cut inside its size still declares one).
    struct BitReader {
        let bytes: [UInt8]
        var position = 0

        mutating func read(_ count: Int) -> Int {
            var value = 0
            for _ in 0..<count {
                let byte = position >> 3
                let bit = byte < bytes.count ? Int(bytes[byte] >> (7 - UInt8(position & 7))) & 1 : 0
                value = value << 1 | bit
                position += 1
            }
            return value
        }

        mutating func skip(_ count: Int) { position += count }

        /// An unsigned exp-Golomb number (`ue(v)`); nil after more than 20 leading zeros,
        /// where libde265 gives up.
        mutating func exponentialGolomb() -> Int? {
            var zeros = 0
            while read(1) == 0 {
                zeros += 1
                if zeros > 20 { return nil }
            }
            return zeros == 0 ? 0 : (1 << zeros) - 1 + read(zeros)
        }
    }
}
