/// The canvas a derived primary image declares: a `grid`'s or an `iovl`'s output size, which
/// is what libheif allocates when it decodes one, whatever its `ispe` says. A file of a few
/// hundred bytes whose grid declares 64759×65527 under an `ispe` of 8×8 made libheif 1.15
/// allocate 4 GB (found by `ops/fuzz heic`), so the limits are checked on the larger of the two.
///
/// A reader of just the boxes that lead there, in the file's bytes: `meta` → `pitm` (the
/// primary item), `iinf`/`infe` (its type), `iloc` (where its data is: in the file, or in
/// `idat`). Anything it cannot follow gives nil, and libheif's own parse judges the file.
enum HEIFCanvas {
    /// What the primary item is decoded into.
    enum Canvas: Equatable {
        /// A coded image (or boxes this reader cannot follow to an item type): its `ispe` is what counts.
        case coded
        /// A `grid` or `iovl` whose data declares this output size.
        case derived(width: Int, height: Int)
        /// A `grid` or `iovl` whose data this reader cannot find or is too short: refused,
        /// since libheif might read a size from it that nobody checked.
        case unreadable(type: String)        /// More than one box of a kind ISO/IEC 23008-12 allows once (`meta` at the top, `pitm`,
        /// `iinf`, `iloc`, `idat` in it): refused, since which one libheif reads is not this
        /// reader's to guess (a file of two `meta` boxes hid a grid's size in the second).
        case duplicated(box: String)
    }

    /// What the primary item is decoded into.
    static func of(_ data: UnsafeRawBufferPointer) -> Canvas {
        let metas = boxes(in: data, 0..<data.count).filter { $0.type == "meta" }
        guard metas.count <= 1 else { return .duplicated(box: "meta") }
        guard let meta = metas.first, meta.body.count >= 4 else { return .coded }
        // `meta` is a full box: its children start after version and flags.
        let children = boxes(in: data, (meta.body.lowerBound + 4)..<meta.body.upperBound)
        for type in ["pitm", "iinf", "iloc", "idat"] where children.filter({ $0.type == type }).count > 1 {
            return .duplicated(box: type)
        }
        guard let pitm = children.first(where: { $0.type == "pitm" }), let primary = primaryID(data, pitm.body),
              let iinf = children.first(where: { $0.type == "iinf" }), let type = itemType(data, iinf.body, of: primary),
              type == "grid" || type == "iovl"
        else { return .coded }
        guard let iloc = children.first(where: { $0.type == "iloc" }),
              let bytes = itemBytes(data, iloc.body, of: primary, idat: children.first(where: { $0.type == "idat" })?.body, count: 20)
        else { return .unreadable(type: type) }
        // grid: version, flags, rows − 1, columns − 1, then the output size; iovl: version,
        // flags, four 16-bit fill values, then the output size. 32-bit fields when flags & 1.
        let start = type == "grid" ? 4 : 10
        let wide = bytes.count > 1 && bytes[1] & 1 == 1, field = wide ? 4 : 2
        guard bytes.count >= start + 2 * field else { return .unreadable(type: type) }
        return .derived(width: number(bytes, start, field), height: number(bytes, start + field, field))
    }

    /// One box: its four-letter type and its body's range in the file.
    struct Box {
        let type: String
        let body: Range<Int>
    }

    /// The boxes laid end to end in `range`; stops at the first that does not fit.
    static func boxes(in data: UnsafeRawBufferPointer, _ range: Range<Int>) -> [Box] {
        var found: [Box] = [], offset = range.lowerBound
        while offset + 8 <= range.upperBound, found.count < 4096 {
            var size = number(data, offset, 4), header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                size = number(data, offset + 8, 8)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else { break }
            found.append(Box(type: String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self), body: (offset + header)..<(offset + size)))
            offset += size
        }
        return found
    }

    /// `pitm`'s item ID (16 bits in version 0, 32 after).
    static func primaryID(_ data: UnsafeRawBufferPointer, _ body: Range<Int>) -> Int? {
        guard body.count >= 6 else { return nil }
        let field = data[body.lowerBound] == 0 ? 2 : 4
        guard body.count >= 4 + field else { return nil }
        return number(data, body.lowerBound + 4, field)
    }

    /// The type of item `id` from `iinf`'s `infe` boxes (versions 2 and 3, which have one).
    static func itemType(_ data: UnsafeRawBufferPointer, _ body: Range<Int>, of id: Int) -> String? {
        itemTypes(data, body).first { $0.id == id }?.type
    }

    /// Each item's ID and type from `iinf`'s `infe` boxes (versions 2 and 3, which have one),
    /// in their order.
    static func itemTypes(_ data: UnsafeRawBufferPointer, _ body: Range<Int>) -> [(id: Int, type: String)] {
        guard body.count >= 6 else { return [] }
        let countField = data[body.lowerBound] == 0 ? 2 : 4
        var types: [(id: Int, type: String)] = []
        for infe in boxes(in: data, (body.lowerBound + 4 + countField)..<body.upperBound) where infe.type == "infe" {
            guard !infe.body.isEmpty else { continue }
            let start = infe.body.lowerBound, version = data[start]
            let idField = version == 2 ? 2 : 4
            // version, flags, the item ID, its protection index (16 bits), its type.
            guard version >= 2, infe.body.count >= 4 + idField + 2 + 4 else { continue }
            let type = start + 4 + idField + 2
            types.append((number(data, start + 4, idField), String(decoding: data[type..<(type + 4)], as: UTF8.self)))
        }
        return types
    }

    /// The first `count` bytes (or fewer, when it has fewer) of item `id`'s data by `iloc`;
    /// nil when `iloc` does not read as far as its entry, or one of its extents cannot be found.
    static func itemBytes(
        _ data: UnsafeRawBufferPointer, _ body: Range<Int>, of id: Int, idat: Range<Int>?, count: Int
    ) -> [UInt8]? {
        guard case let found = itemExtents(data, body, idat: idat, until: id), let entry = found[id], let extents = entry else { return nil }
        var bytes: [UInt8] = []
        for extent in extents where bytes.count < count {
            bytes += data[extent.lowerBound..<(extent.lowerBound + min(extent.count, count - bytes.count))]
        }
        return bytes
    }

    /// Where each item's data is by `iloc`, in the order of its entries: its extents in the file
    /// (construction method 0) or in `idat` (1), each cut at the end of the file; an item
    /// whose extents cannot be found maps to nil. Stops at the first entry that does not read,
    /// or after item `until`'s.
    static func itemExtents(
        _ data: UnsafeRawBufferPointer, _ body: Range<Int>, idat: Range<Int>?, until: Int? = nil
    ) -> [Int: [Range<Int>]?] {
        var found: [Int: [Range<Int>]?] = [:]
        var reader = Reader(data: data, offset: body.lowerBound, end: body.upperBound)
        guard let version = reader.read(1), reader.read(3) != nil, let sizes = reader.read(1), let more = reader.read(1) else { return found }
        let offsetSize = sizes >> 4, lengthSize = sizes & 15, baseSize = more >> 4
        let indexSize = version == 1 || version == 2 ? more & 15 : 0
        guard let items = reader.read(version < 2 ? 2 : 4) else { return found }
        for _ in 0..<min(items, 65_536) {
            guard let item = reader.read(version < 2 ? 2 : 4) else { return found }
            var method = 0
            if version == 1 || version == 2 {
                guard let field = reader.read(2) else { return found }
                method = field & 15
            }
            guard reader.read(2) != nil, let base = reader.read(baseSize), let count = reader.read(2) else { return found }
            var extents: [Range<Int>]? = []
            for _ in 0..<count {
                guard reader.read(indexSize) != nil, let offset = reader.read(offsetSize), let length = reader.read(lengthSize) else { return found }
                guard extents != nil else { continue }
                let source: Range<Int>
                switch method {
                case 0: source = 0..<data.count
                case 1 where idat != nil:
                    // From the start of `idat` to the end of the file, not of the box: libheif
                    // 1.15 reads an extent that runs past `idat` from the bytes after it (a
                    // grid's size taken from the next box's header: found by `ops/fuzz heic`).
                    source = idat!.lowerBound..<data.count
                default:
                    extents = nil
                    continue
                }
                let (based, overflow) = source.lowerBound.addingReportingOverflow(base)
                let (start, overflowed) = based.addingReportingOverflow(offset)
                guard !overflow, !overflowed, base >= 0, offset >= 0, start < source.upperBound else {
                    extents = nil
                    continue
                }
                // An extent of length 0 runs to the end of its source.
                let available = source.upperBound - start
                extents?.append(start..<(start + (length <= 0 ? available : min(length, available))))
            }
            // An item listed twice: the first entry is the one that counts here.
            if found[item] == nil { found[item] = .some(extents) }
            if item == until { return found }
        }
        return found
    }

    /// A big-endian unsigned number of `size` bytes at `offset` (0 for size 0).
    static func number(_ data: some RandomAccessCollection<UInt8>, _ offset: Int, _ size: Int) -> Int {
        var value = 0
        for index in 0..<size { value = value << 8 | Int(data[data.index(data.startIndex, offsetBy: offset + index)]) }
        return value
    }

    /// Reads big-endian fields of 0 to 8 bytes, nil past the end.
    struct Reader {
        let data: UnsafeRawBufferPointer
        var offset: Int
        let end: Int

        mutating func read(_ size: Int) -> Int? {
            guard size >= 0, size <= 8, offset + size <= end else { return nil }
            defer { offset += size }
            return HEIFCanvas.number(data, offset, size)
        }
    }
}
