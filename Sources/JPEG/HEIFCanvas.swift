/// The canvases a file's derived images declare: a `grid`'s or an `iovl`'s output size, which
/// is what libheif allocates when it decodes one, whatever the `ispe` says. A file of a few
/// hundred bytes whose grid declares 64759×65527 under an `ispe` of 8×8 made libheif 1.15
/// allocate 4 GB (found by `ops/fuzz heic`), so the limits are checked on the largest canvas
/// when it is larger than the primary image's `ispe`. Every derived item counts, not only the
/// primary: a grid's tile may itself be an overlay, decoded into its own canvas (found by
/// `ops/fuzz heic`: a 63751×1 grid whose one tile was an overlay of 533 MB).
///
/// A reader of just the boxes that lead there, in the file's bytes: `meta` → `iinf`/`infe`
/// (each item's type), `iloc` (where its data is: in the file, or in `idat`), `iref` (what a
/// derived image takes as input). What it cannot follow counts as coded, and libheif's own
/// parse judges the file.
enum HEIFCanvas {
    /// What the file's derived items are decoded into.
    enum Canvas: Equatable {
        /// No derived item (or boxes this reader cannot follow to item types): the `ispe` is what counts.
        case coded
        /// The largest output size (by area) a `grid` or `iovl` item's data declares.
        case derived(width: Int, height: Int)
        /// A `grid` or `iovl` whose data this reader cannot find or is too short: refused,
        /// since libheif might read a size from it that nobody checked.
        case unreadable(type: String)
        /// More than one box of a kind ISO/IEC 23008-12 allows once (`meta` at the top, `pitm`,
        /// `iinf`, `iloc`, `idat`, `iref` in it): refused, since which one libheif reads is not
        /// this reader's to guess (a file of two `meta` boxes hid a grid's size in the second).
        case duplicated(box: String)
        /// A derived item (`grid`, `iovl`, `iden`) that takes another derived item as input:
        /// refused, since libheif 1.15 follows such references with no guard against a loop
        /// (a grid that is its own tile's tile), and each level holds a canvas of its own.
        case nested(outer: String, inner: String)
    }

    /// The item types libheif decodes by decoding others (`dimg` references).
    static let derivedTypes: Set<String> = ["grid", "iovl", "iden"]

    /// What the file's derived items are decoded into.
    static func of(_ data: UnsafeRawBufferPointer) -> Canvas { of(HEIFMeta(data)) }

    /// What the file's derived items are decoded into, from its `meta` read once.
    static func of(_ meta: HEIFMeta) -> Canvas {
        let data = meta.data
        guard meta.count <= 1 else { return .duplicated(box: "meta") }
        for type in ["pitm", "iinf", "iloc", "idat", "iref"] where meta.children.filter({ $0.type == type }).count > 1 {
            return .duplicated(box: type)
        }
        let derived = [Int: String](meta.types.filter { derivedTypes.contains($0.type) }, uniquingKeysWith: { first, _ in first })
        guard !derived.isEmpty else { return .coded }
        if let iref = meta.first("iref") {
            for reference in references(data, iref.body) where reference.type == "dimg" {
                guard let outer = derived[reference.from], let inner = reference.to.lazy.compactMap({ derived[$0] }).first else { continue }
                return .nested(outer: outer, inner: inner)
            }
        }
        var largest: (width: Int, height: Int)?
        for (id, type) in derived.sorted(by: { $0.key < $1.key }) where type != "iden" {
            guard let found = meta.extents[id], let ranges = found else { return .unreadable(type: type) }
            let itemData = HEIFPictures.Stream(data: data, extents: ranges)
            let bytes = (0..<min(20, itemData.count)).map(itemData.byte(at:))
            // grid: version, flags, rows − 1, columns − 1, then the output size; iovl: version,
            // flags, four 16-bit fill values, then the output size. 32-bit fields when flags & 1.
            let start = type == "grid" ? 4 : 10
            let wide = bytes.count > 1 && bytes[1] & 1 == 1, field = wide ? 4 : 2
            guard bytes.count >= start + 2 * field else { return .unreadable(type: type) }
            largest = larger(largest, (number(bytes, start, field), number(bytes, start + field, field)))
        }
        return largest.map { .derived(width: $0.width, height: $0.height) } ?? .coded
    }

    /// `width` × `height`, or Int.max where that does not fit (two 32-bit sides).
    static func area(_ size: (width: Int, height: Int)) -> Int {
        let (product, overflow) = size.width.multipliedReportingOverflow(by: size.height)
        return overflow ? .max : product
    }

    /// The larger by `area` of `current` (when there is one) and `candidate`; `current` on a tie.
    static func larger(_ current: (width: Int, height: Int)?, _ candidate: (width: Int, height: Int)) -> (width: Int, height: Int) {
        guard let current, area(current) >= area(candidate) else { return candidate }
        return current
    }

    /// One reference of `iref`: its type (`dimg`, `thmb`, `auxl`…), from one item to others.
    struct Reference {
        let type: String
        let from: Int
        let to: [Int]
    }

    /// The references of an `iref` box (16-bit item IDs in version 0, 32 after).
    static func references(_ data: UnsafeRawBufferPointer, _ body: Range<Int>) -> [Reference] {
        guard body.count >= 4 else { return [] }
        let field = data[body.lowerBound] == 0 ? 2 : 4
        var found: [Reference] = []
        for box in boxes(in: data, (body.lowerBound + 4)..<body.upperBound) {
            var reader = Reader(data: data, offset: box.body.lowerBound, end: box.body.upperBound)
            guard let from = reader.read(field), let count = reader.read(2) else { continue }
            var to: [Int] = []
            for _ in 0..<count {
                guard let id = reader.read(field) else { break }
                to.append(id)
            }
            found.append(Reference(type: box.type, from: from, to: to))
        }
        return found
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

    /// Where each item's data is by `iloc`, in the order of its entries: its extents in the file
    /// (construction method 0) or in `idat` (1), each cut at the end of the file; an item
    /// whose extents cannot be found maps to nil. Stops at the first entry that does not read.
    static func itemExtents(_ data: UnsafeRawBufferPointer, _ body: Range<Int>, idat: Range<Int>?) -> [Int: [Range<Int>]?] {
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

/// A file's `meta` box read once for `HEIFCanvas` and `HEIFPictures`: its children (of the
/// first `meta`, and how many there are), each item's type and where its data is.
struct HEIFMeta {
    let data: UnsafeRawBufferPointer
    /// How many `meta` boxes the file has at its top.
    let count: Int
    /// The first `meta`'s boxes (it is a full box: they start after version and flags).
    let children: [HEIFCanvas.Box]
    /// Each item's ID and type, in `iinf`'s order; the first `infe` of an ID counts.
    let types: [(id: Int, type: String)]
    /// Where each item's data is (`HEIFCanvas.itemExtents`); empty without an `iloc`.
    let extents: [Int: [Range<Int>]?]

    init(_ data: UnsafeRawBufferPointer) {
        self.data = data
        let metas = HEIFCanvas.boxes(in: data, 0..<data.count).filter { $0.type == "meta" }
        count = metas.count
        let children = metas.first.map { meta in
            meta.body.count >= 4 ? HEIFCanvas.boxes(in: data, (meta.body.lowerBound + 4)..<meta.body.upperBound) : []
        } ?? []
        self.children = children
        var seen = Set<Int>()
        types = children.first { $0.type == "iinf" }.map { HEIFCanvas.itemTypes(data, $0.body).filter { seen.insert($0.id).inserted } } ?? []
        let idat = children.first { $0.type == "idat" }?.body
        extents = children.first { $0.type == "iloc" }.map { HEIFCanvas.itemExtents(data, $0.body, idat: idat) } ?? [:]
    }

    /// The first child of `type`.
    func first(_ type: String) -> HEIFCanvas.Box? { children.first { $0.type == type } }
}
