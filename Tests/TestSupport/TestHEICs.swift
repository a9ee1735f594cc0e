import Foundation

/// HEIC test files made at test time from the repository's JPEG photos by `heif-enc`
/// (libheif-examples, x265), and edited at the box level: `irot`/`imir` transformations added
/// to the primary image (`oriented`), its `ispe` size rewritten (`claiming`).
///
/// `heif-enc` stores a JPEG's pixels as they are stored (it applies no EXIF orientation and
/// writes no `irot`/`imir`) and copies its EXIF, Orientation tag included.
public enum TestHEICs {
    /// Why a HEIC could not be made or edited.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `heif-enc -q quality` of a JPEG file.
    public static func encode(jpegFile: URL, quality: Int = 60) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("heic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("out.heic")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/heif-enc")
        process.arguments = ["-q", String(quality), "-o", output.path, jpegFile.path]
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "heif-enc \(jpegFile.lastPathComponent) exited \(process.terminationStatus): \(String(decoding: said, as: UTF8.self))")
        }
        return [UInt8](try Data(contentsOf: output))
    }

    /// `encode` of bytes (written to a temporary JPEG first).
    public static func encode(jpeg: [UInt8], quality: Int = 60) throws -> [UInt8] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("heic-src-\(UUID().uuidString).jpg")
        try Data(jpeg).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try encode(jpegFile: file, quality: quality)
    }

    /// The HEIF transformations (in `ipma` order) that show stored pixels as EXIF Orientation
    /// `orientation` shows them: `irot` angles are anticlockwise quarter turns; `imir` mode 0
    /// exchanges the top and bottom parts, mode 1 the left and right parts (ISO/IEC 23008-12:2022
    /// 6.5.12, whose note pairs mode 0 with EXIF orientation 4 and mode 1 with 2; libheif reads it
    /// so). The 2017 edition's wording ("a vertical (axis = 0) or horizontal (axis = 1) axis")
    /// reads the other way round; the first version of this helper did, and the pixel tests
    /// caught it.
    public enum Transform: Equatable {
        case rotate(quarterTurnsAnticlockwise: UInt8)
        case mirror(mode: UInt8)
    }

    /// EXIF orientation 1...8 as HEIF transformations (ISO/IEC 23008-12 `irot`, `imir`;
    /// MIAF orders a rotation before a mirror).
    public static func transforms(forEXIF orientation: Int) -> [Transform] {
        switch orientation {
        case 2: [.mirror(mode: 1)]
        case 3: [.rotate(quarterTurnsAnticlockwise: 2)]
        case 4: [.mirror(mode: 0)]
        case 5: [.rotate(quarterTurnsAnticlockwise: 3), .mirror(mode: 1)]
        case 6: [.rotate(quarterTurnsAnticlockwise: 3)]
        case 7: [.rotate(quarterTurnsAnticlockwise: 1), .mirror(mode: 1)]
        case 8: [.rotate(quarterTurnsAnticlockwise: 1)]
        default: []
        }
    }

    /// `heic` with `transforms` added to its primary image: each a new property at the end of
    /// `ipco`, associated (essential) after the primary's existing ones in `ipma`; the boxes
    /// that hold them grow, and every `iloc` file offset past them moves by as much.
    public static func oriented(_ heic: [UInt8], _ transforms: [Transform]) throws -> [UInt8] {
        guard !transforms.isEmpty else { return heic }
        let meta = try box("meta", in: heic, from: 0, to: heic.count)
        let metaChildren = meta.body + 4  // full box
        let primary = try primaryItem(heic, meta, metaChildren)
        let iprp = try box("iprp", in: heic, from: metaChildren, to: meta.end)
        let ipco = try box("ipco", in: heic, from: iprp.body, to: iprp.end)
        let ipma = try box("ipma", in: heic, from: iprp.body, to: iprp.end)
        var count = 0
        var p = ipco.body
        while p < ipco.end { count += 1; p += try size(heic, p) }
        var added: [UInt8] = []
        for transform in transforms {
            switch transform {
            case .rotate(let turns): added += [0, 0, 0, 9] + Array("irot".utf8) + [turns & 3]
            case .mirror(let mode): added += [0, 0, 0, 9] + Array("imir".utf8) + [mode & 1]
            }
        }
        let newIndices = (0..<transforms.count).map { count + 1 + $0 }
        // ipma: rewritten whole, the primary's associations extended.
        let version = heic[ipma.body], flags = Int(heic[ipma.body + 3])
        let wideIndex = flags & 1 == 1, wideItem = version >= 1
        var q = ipma.body + 4
        let entries = read32(heic, q); q += 4
        var newIPMA: [UInt8] = Array(heic[ipma.body..<(ipma.body + 8)])
        for _ in 0..<entries {
            let item = wideItem ? read32(heic, q) : read16(heic, q)
            let itemBytes = wideItem ? 4 : 2
            let associations = Int(heic[q + itemBytes])
            let listStart = q + itemBytes + 1, listEnd = listStart + associations * (wideIndex ? 2 : 1)
            var list = Array(heic[listStart..<listEnd])
            var total = associations
            if item == primary {
                for index in newIndices {
                    list += wideIndex ? [UInt8(0x80 | (index >> 8)), UInt8(index & 0xFF)] : [UInt8(0x80 | index)]
                    total += 1
                }
            }
            newIPMA += Array(heic[q..<(q + itemBytes)]) + [UInt8(total)] + list
            q = listEnd
        }
        let ipmaGrowth = (newIPMA.count + 8) - (ipma.end - ipma.start)
        let growth = added.count + ipmaGrowth
        // Rebuild: everything up to ipco's end, the new properties, up to ipma, the new ipma, the rest.
        var out = Array(heic[0..<ipco.end]) + added
        if ipma.start >= ipco.end {
            out += heic[ipco.end..<ipma.start] + header(newIPMA.count + 8, "ipma") + newIPMA + heic[ipma.end...]
        } else {
            throw Failure(description: "ipma before ipco: not handled")
        }
        // Sizes of the boxes that grew (their offsets are unchanged: they start before the insertions).
        add(&out, at: meta.start, growth)
        add(&out, at: iprp.start, growth)
        add(&out, at: ipco.start, added.count)
        // iloc offsets into the file past the insertion point move.
        let iloc = try box("iloc", in: out, from: metaChildren, to: meta.end + growth)
        try shiftILOC(&out, iloc, past: ipco.end, by: growth)
        return out
    }

    /// `heic` with its primary image's `ispe` rewritten to `width` × `height` (nothing else
    /// changes: the coded data still holds the real size).
    public static func claiming(_ heic: [UInt8], width: UInt32, height: UInt32) throws -> [UInt8] {
        let meta = try box("meta", in: heic, from: 0, to: heic.count)
        let iprp = try box("iprp", in: heic, from: meta.body + 4, to: meta.end)
        let ipco = try box("ipco", in: heic, from: iprp.body, to: iprp.end)
        let ispe = try box("ispe", in: heic, from: ipco.body, to: ipco.end)
        var out = heic
        for (i, byte) in (bigEndian(width) + bigEndian(height)).enumerated() { out[ispe.body + 4 + i] = byte }
        return out
    }

    /// The coded size `ispe` declares.
    public static func ispe(_ heic: [UInt8]) throws -> (width: Int, height: Int) {
        let meta = try box("meta", in: heic, from: 0, to: heic.count)
        let iprp = try box("iprp", in: heic, from: meta.body + 4, to: meta.end)
        let ipco = try box("ipco", in: heic, from: iprp.body, to: iprp.end)
        let ispe = try box("ispe", in: heic, from: ipco.body, to: ipco.end)
        return (read32(heic, ispe.body + 4), read32(heic, ispe.body + 8))
    }

    // MARK: Boxes

    struct Box { let start: Int, body: Int, end: Int }

    static func size(_ data: [UInt8], _ at: Int) throws -> Int {
        guard at + 8 <= data.count else { throw Failure(description: "a box header at \(at) runs past the end") }
        let size = read32(data, at)
        guard size >= 8 else { throw Failure(description: "box at \(at) has size \(size) (64-bit and to-end sizes not handled)") }
        return size
    }

    static func box(_ type: String, in data: [UInt8], from: Int, to: Int) throws -> Box {
        var p = from
        while p + 8 <= to {
            let length = try size(data, p)
            if String(decoding: data[(p + 4)..<(p + 8)], as: UTF8.self) == type { return Box(start: p, body: p + 8, end: p + length) }
            p += length
        }
        throw Failure(description: "no \(type) box between \(from) and \(to)")
    }

    static func primaryItem(_ data: [UInt8], _ meta: Box, _ children: Int) throws -> Int {
        let pitm = try box("pitm", in: data, from: children, to: meta.end)
        return data[pitm.body] == 0 ? read16(data, pitm.body + 4) : read32(data, pitm.body + 4)
    }

    static func shiftILOC(_ data: inout [UInt8], _ iloc: Box, past: Int, by delta: Int) throws {
        let version = data[iloc.body]
        var p = iloc.body + 4
        let offsetSize = Int(data[p] >> 4), lengthSize = Int(data[p] & 15)
        let baseSize = Int(data[p + 1] >> 4), indexSize = version >= 1 ? Int(data[p + 1] & 15) : 0
        p += 2
        let items: Int
        if version < 2 { items = read16(data, p); p += 2 } else { items = read32(data, p); p += 4 }
        for _ in 0..<items {
            p += version < 2 ? 2 : 4
            var method = 0
            if version >= 1 { method = Int(data[p + 1] & 15); p += 2 }
            p += 2  // data_reference_index
            let base = readN(data, p, baseSize)
            let basePosition = p
            p += baseSize
            let extents = read16(data, p); p += 2
            if method == 0, baseSize > 0, base > 0 {
                if base >= past { writeN(&data, basePosition, baseSize, base + delta) }
                p += extents * (indexSize + offsetSize + lengthSize)
                continue
            }
            for _ in 0..<extents {
                p += indexSize
                let offset = readN(data, p, offsetSize)
                if method == 0, offsetSize > 0, offset >= past { writeN(&data, p, offsetSize, offset + delta) }
                p += offsetSize + lengthSize
            }
        }
    }

    static func read16(_ d: [UInt8], _ p: Int) -> Int { Int(d[p]) << 8 | Int(d[p + 1]) }
    static func read32(_ d: [UInt8], _ p: Int) -> Int { Int(d[p]) << 24 | Int(d[p + 1]) << 16 | Int(d[p + 2]) << 8 | Int(d[p + 3]) }
    static func readN(_ d: [UInt8], _ p: Int, _ n: Int) -> Int { (0..<n).reduce(0) { $0 << 8 | Int(d[p + $1]) } }
    static func writeN(_ d: inout [UInt8], _ p: Int, _ n: Int, _ value: Int) {
        for i in 0..<n { d[p + i] = UInt8((value >> (8 * (n - 1 - i))) & 0xFF) }
    }
    static func add(_ d: inout [UInt8], at p: Int, _ delta: Int) { writeN(&d, p, 4, read32(d, p) + delta) }
    static func header(_ size: Int, _ type: String) -> [UInt8] { bigEndian(UInt32(size)) + Array(type.utf8) }
    static func bigEndian(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
}
