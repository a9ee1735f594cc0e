#if canImport(Glibc)
import Glibc
#endif

/// One pass over a JPEG's structure, from SOI to EOI: every marker segment (up to
/// `DecodeOptions.maxSegments`, of any size: the header is found wherever it is), each scan's
/// header and its entropy-coded data, without decoding a pixel.
///
/// It refuses, with the offset and the reason, what libjpeg-turbo would refuse or warn about
/// (and so fail the decode): segments that run past the end, malformed DQT, DHT, DRI, SOF and
/// SOS segments, scans that name unknown components or tables, progressive scripts out of
/// order, restart markers out of sequence or miscounted, entropy-coded data shorter or longer
/// than the scan's blocks can take, a missing EOI. What it cannot tell is whether the Huffman
/// codes themselves decode.
///
/// Extraneous bytes between marker segments, which libjpeg skips with a warning and every
/// viewer opens, are skipped the same way (`JPEGSegmentReader`), at most
/// `DecodeOptions.maxExtraneousBytes` in all, and recorded (`extraneous`) so the decoder can be
/// handed the file without them. Inside a scan's entropy-coded data such bytes cannot be told
/// from the data without decoding it: they count as its bytes, within the scan's bounds (one
/// pass, as all of it), and the decoder, which warns about bytes left over before a restart
/// marker or the next segment, refuses them (all but the few its bit buffer has read ahead,
/// which it drops without a word).
///
/// The walk is linear: each segment is skipped in constant time by its length, and the
/// entropy-coded data and extraneous bytes are searched for 0xFF with memchr; nothing is
/// allocated per segment, only a range per run of extraneous bytes.
struct JPEGWalker {
    let data: UnsafeRawBufferPointer
    /// Against progressive-scan bombs, as TJFLAG_LIMITSCANS in the decoder.
    let maxScans: Int?
    /// `DecodeOptions.maxSegments`.
    let maxSegments: Int
    /// Marker segments read so far (outside entropy-coded data).
    private var segments = 0
    private var reader: JPEGSegmentReader
    private(set) var frame: JPEGFrame?
    /// The payload of the first APP1 "Exif" segment.
    private(set) var exif: Range<Int>?
    /// An APP14 "Adobe" segment was seen.
    private(set) var adobe = false
    /// The APP2 "ICC_PROFILE" segments before the first scan, in file order (`ICCProfile`
    /// puts them in sequence); libjpeg reads none after it either.
    private(set) var iccChunks: [JPEGSegment] = []
    /// Scans walked so far.
    private(set) var scans = 0
    /// Bit i set: quantisation table i is defined.
    private var quantTables: UInt8 = 0
    private var restartInterval = 0
    /// The first scan's SOS, found by `readHeader`.
    private var firstScan: JPEGSegment?
    /// For progressive frames: per component, the successive-approximation bit each of the 64
    /// coefficients was left at (-1: not yet coded), as libjpeg tracks it.
    private var coefficientBits: [Int8] = []

    /// The limit libjpeg-turbo's TJFLAG_LIMITSCANS enforces.
    static let scanLimit = 500

    /// A walker over `data`, which starts with SOI (FF D8).
    init(_ data: UnsafeRawBufferPointer, options: DecodeOptions) {
        precondition(data.count >= 2 && data[0] == 0xFF && data[1] == 0xD8, "JPEGWalker needs data that starts with SOI")
        self.data = data
        self.maxScans = options.limitScans ? Self.scanLimit : nil
        self.maxSegments = options.maxSegments
        reader = JPEGSegmentReader(data: data, position: 2, maxExtraneousBytes: options.maxExtraneousBytes)
    }

    /// The runs of extraneous bytes between marker segments skipped so far, in order.
    var extraneous: [Range<Int>] { reader.extraneous }
    /// The bytes in `extraneous`.
    var extraneousBytes: Int { reader.extraneousBytes }

    /// Walks the header: every segment up to and including the first SOS. Returns the offset
    /// just past that SOS segment (all a header reader needs).
    mutating func readHeader() throws(JPEGError) -> Int {
        while true {
            guard let segment = try reader.next() else {
                throw JPEGError(kind: .truncated, message: "\(missing) before the end of the data at offset \(data.count)")
            }
            try count(segment)
            switch segment.marker {
            case 0xDA:
                guard frame != nil else {
                    throw JPEGError(kind: .corrupt, message: "the SOS at offset \(segment.offset) comes before any frame header (SOF)")
                }
                firstScan = segment
                return segment.end
            case 0xD9:
                throw JPEGError(kind: .truncated, message: "\(missing) before the EOI at offset \(segment.offset)")
            default:
                try accept(segment)
            }
        }
    }

    /// What the header lacks, for messages.
    private var missing: String { frame == nil ? "no frame header (SOF)" : "no scan (SOS)" }

    /// Walks every scan and the segments between them, after `readHeader`, up to EOI. Returns
    /// the offset just past EOI (what follows it is not part of the image).
    mutating func readScans() throws(JPEGError) -> Int {
        guard var scan = firstScan else { preconditionFailure("readScans needs readHeader first") }
        while true {
            try read(scan: scan)
            var next: JPEGSegment?
            while next == nil {
                guard let segment = try reader.next() else {
                    throw JPEGError(
                        kind: .truncated, message: "the data ends at offset \(data.count) after scan \(scans), before EOI")
                }
                try count(segment)
                switch segment.marker {
                case 0xDA: next = segment
                case 0xD9: return segment.end
                default: try accept(segment)
                }
            }
            scan = next!
        }
    }

    // MARK: Segments

    /// Counts one more segment against `maxSegments`.
    private mutating func count(_ segment: JPEGSegment) throws(JPEGError) {
        segments += 1
        guard segments <= maxSegments else {
            throw JPEGError(
                kind: .unsupported("more than \(maxSegments) marker segments"),
                message: "the JPEG has more than \(maxSegments) marker segments (the \(segments)th is at offset \(segment.offset)); real files have a few dozen")
        }
    }

    /// Takes in one segment outside the scans.
    private mutating func accept(_ segment: JPEGSegment) throws(JPEGError) {
        let marker = segment.marker
        switch marker {
        case _ where JPEGFrame.isFrameMarker(marker):
            if let frame {
                throw JPEGError(
                    kind: .corrupt,
                    message: "a second frame header (\(JPEGSegment.name(of: marker))) at offset \(segment.offset); the first is at offset \(frame.offset)")
            }
            let frame = try JPEGFrame(segment, in: data)
            if frame.progressive { coefficientBits = [Int8](repeating: -1, count: frame.components.count * 64) }
            self.frame = frame
        case 0xC4:
            try readHuffmanTables(segment)
        case 0xDB:
            try readQuantisationTables(segment)
        case 0xDD:
            guard segment.payload.count == 2 else {
                throw JPEGError(
                    kind: .corrupt, message: "the DRI segment at offset \(segment.offset) is \(segment.payload.count + 2) bytes (it must be 4)")
            }
            restartInterval = Int(data[segment.payload.lowerBound]) << 8 | Int(data[segment.payload.lowerBound + 1])
        case 0xD8:
            throw JPEGError(kind: .corrupt, message: "a second SOI at offset \(segment.offset)")
        case 0xE1:
            if exif == nil, JPEGSegment.isExif(segment, in: data) { exif = segment.payload }
        case 0xE2:
            if firstScan == nil, JPEGSegment.isICCProfile(segment, in: data) { iccChunks.append(segment) }
        case 0xEE:
            if JPEGSegment.isAdobe(segment, in: data) { adobe = true }
        case 0x01, 0xD0...0xD7, 0xCC, 0xDC, 0xE0...0xEF, 0xFE:
            // TEM and stray RSTn (libjpeg ignores them), DAC, DNL, APPn and COM: nothing to check.
            break
        default:
            throw JPEGError(
                kind: .corrupt,
                message: "\(JPEGSegment.name(of: marker)) at offset \(segment.offset) is not a marker the decoder accepts")
        }
    }

    private func readHuffmanTables(_ segment: JPEGSegment) throws(JPEGError) {
        func bad(_ why: String) -> JPEGError {
            JPEGError(kind: .corrupt, message: "the DHT segment at offset \(segment.offset) \(why)")
        }
        var index = segment.payload.lowerBound
        let end = segment.payload.upperBound
        while index < end {
            guard index + 17 <= end else { throw bad("ends inside a table's code counts") }
            let tableClass = data[index] >> 4, id = data[index] & 15
            guard tableClass <= 1, id <= 3 else { throw bad("defines table class \(tableClass) id \(id) (class 0 or 1, id 0 to 3)") }
            // The canonical codes of T.81 C.2 must fit their lengths (libjpeg checks the same).
            var symbols = 0, code = 0
            for length in 1...16 {
                let count = Int(data[index + length])
                symbols += count
                code += count
                guard code < 1 << length else { throw bad("has more codes of length \(length) bits or less than a prefix code can have") }
                code <<= 1
            }
            guard symbols <= 256 else { throw bad("declares \(symbols) codes in one table (at most 256)") }
            guard index + 17 + symbols <= end else { throw bad("declares \(symbols) codes but holds fewer") }
            if tableClass == 0 {
                for value in index + 17..<index + 17 + symbols where data[value] > 15 {
                    throw bad("has DC symbol \(data[value]) (at most 15)")
                }
            }
            index += 17 + symbols
        }
    }

    private mutating func readQuantisationTables(_ segment: JPEGSegment) throws(JPEGError) {
        var index = segment.payload.lowerBound
        let end = segment.payload.upperBound
        while index < end {
            let precision = data[index] >> 4, id = data[index] & 15
            guard precision <= 1, id <= 3 else {
                throw JPEGError(
                    kind: .corrupt,
                    message: "the DQT segment at offset \(segment.offset) defines table \(id) with precision \(precision) (table 0 to 3, precision 0 or 1)")
            }
            let size = 1 + 64 * (Int(precision) + 1)
            guard index + size <= end else {
                throw JPEGError(kind: .corrupt, message: "the DQT segment at offset \(segment.offset) ends inside table \(id)")
            }
            quantTables |= 1 << id
            index += size
        }
    }

    // MARK: Scans

    /// Checks one scan's header, then walks its entropy-coded data up to the marker after it.
    private mutating func read(scan sos: JPEGSegment) throws(JPEGError) {
        guard let frame else { preconditionFailure("a scan is read only after the frame header") }
        scans += 1
        let at = sos.offset, number = scans
        func bad(_ why: String) -> JPEGError {
            JPEGError(kind: .corrupt, message: "scan \(number) (SOS at offset \(at)) \(why)")
        }
        if let maxScans, scans > maxScans {
            throw JPEGError(
                kind: .unsupported("Progressive JPEG image has more than \(maxScans) scans"),
                message: "the JPEG has more than \(maxScans) scans (the decoder's limit against progressive-scan CPU exhaustion)")
        }
        let p = sos.payload.lowerBound
        let count = sos.payload.isEmpty ? 0 : Int(data[p])
        guard (1...4).contains(count), count <= frame.components.count else {
            throw bad("names \(count) components; the frame has \(frame.components.count)")
        }
        guard sos.payload.count == 4 + 2 * count else {
            throw bad("is \(sos.payload.count + 2) bytes; a scan of \(count) components is \(6 + 2 * count)")
        }
        var members: [Int] = []
        for k in 0..<count {
            let id = data[p + 1 + 2 * k], tables = data[p + 2 + 2 * k]
            guard let member = frame.components.firstIndex(where: { $0.id == id }) else {
                throw bad("names component \(id), which the frame does not have")
            }
            guard !members.contains(member) else { throw bad("names component \(id) twice") }
            guard tables >> 4 <= 3, tables & 15 <= 3 else {
                throw bad("selects entropy tables \(tables >> 4) and \(tables & 15) for component \(id) (0 to 3)")
            }
            let table = frame.components[member].quantTable
            guard quantTables & (1 << table) != 0 else {
                throw bad("needs quantisation table \(table) (component \(id)), which no DQT before it defines")
            }
            members.append(member)
        }
        let ss = Int(data[p + 1 + 2 * count]), se = Int(data[p + 2 + 2 * count])
        let ah = Int(data[p + 3 + 2 * count] >> 4), al = Int(data[p + 3 + 2 * count] & 15)
        if frame.progressive {
            try checkProgression(members, ss: ss, se: se, ah: ah, al: al, bad: bad)
        } else {
            guard ss == 0, se == 63, ah == 0, al == 0 else {
                throw bad("of a sequential frame declares Ss=\(ss) Se=\(se) Ah=\(ah) Al=\(al) (it must be 0, 63, 0, 0)")
            }
        }
        // T.81 A.2: one block per MCU in a scan of one component, else every component's h × v.
        let mcus: Int, blocks: Int
        if count == 1 {
            let component = frame.components[members[0]]
            mcus = component.blocksWide * component.blocksHigh
            blocks = mcus
        } else {
            let perMCU = members.reduce(0) { $0 + frame.components[$1].h * frame.components[$1].v }
            guard perMCU <= 10 else { throw bad("has \(perMCU) blocks in each MCU (at most 10)") }
            mcus = JPEGFrame.ceilDiv(frame.width, 8 * frame.hMax) * JPEGFrame.ceilDiv(frame.height, 8 * frame.vMax)
            blocks = mcus * perMCU
        }
        let expectedRestarts = restartInterval > 0 ? (mcus - 1) / restartInterval : 0
        let (bytes, restarts) = try walkEntropyCodedData(from: sos.end, expectedRestarts: expectedRestarts, bad: bad)
        guard restarts == expectedRestarts else {
            throw bad("has \(restarts) restart markers; its \(mcus) MCUs in intervals of \(restartInterval) need \(expectedRestarts)")
        }
        // Arithmetic coding can take less than a bit per block and has no such bounds.
        guard !frame.arithmetic else { return }
        let (least, most) = Self.bitsPerBlock(progressive: frame.progressive, ss: ss, se: se, ah: ah)
        let minimum = (blocks * least + 7) / 8
        let maximum = (blocks * most + 7) / 8 + restarts + 1  // and a padded last byte per interval
        guard bytes >= minimum else {
            throw JPEGError(
                kind: .truncated,
                message: "scan \(number) (SOS at offset \(at)) has \(bytes) bytes of entropy-coded data; its \(blocks) blocks need at least \(minimum)")
        }
        guard bytes <= maximum else {
            throw bad("has \(bytes) bytes of entropy-coded data; its \(blocks) blocks can hold at most \(maximum)")
        }
    }

    /// The progressive scan rules libjpeg enforces (jdphuff.c): DC and AC bands, one component
    /// per AC scan, each refinement following the scan before it by one bit.
    private mutating func checkProgression(
        _ members: [Int], ss: Int, se: Int, ah: Int, al: Int, bad: (String) -> JPEGError
    ) throws(JPEGError) {
        let valid = ss == 0
            ? se == 0
            : ss <= se && se <= 63 && members.count == 1
        guard valid, ah == 0 || al == ah - 1, al <= 13 else {
            throw bad("declares the progression Ss=\(ss) Se=\(se) Ah=\(ah) Al=\(al), which is not a valid progressive scan")
        }
        for member in members {
            let row = member * 64
            if ss > 0, coefficientBits[row] < 0 {
                throw bad("codes AC coefficients of component \(frame!.components[member].id) before its DC scan")
            }
            for k in ss...se {
                let before = max(0, Int(coefficientBits[row + k]))
                guard ah == before else {
                    throw bad("refines coefficient \(k) of component \(frame!.components[member].id) from bit \(ah), but the scans before it left bit \(before)")
                }
                coefficientBits[row + k] = Int8(al)
            }
        }
    }

    /// Fewest and most bits a block can take in a Huffman scan: a code is 1...16 bits and its
    /// extra bits at most 15, so 32 bits bound each code.
    static func bitsPerBlock(progressive: Bool, ss: Int, se: Int, ah: Int) -> (least: Int, most: Int) {
        guard progressive else { return (2, 64 * 32) }  // a DC code and an EOB, or up to 63 AC codes
        if ss == 0 { return ah == 0 ? (1, 32) : (1, 1) }  // DC first: one code; DC refinement: one bit
        // AC: a whole run of blocks can share one EOBRUN code; each coefficient takes a code
        // (and, refining, a correction bit), plus one EOB.
        let band = se - ss + 1
        return (0, (band + 1) * 32 + (ah == 0 ? 0 : band))
    }

    /// Walks the entropy-coded data from `start` to the marker that ends it (where `reader`
    /// goes on): byte stuffing (FF 00), fill bytes, restart markers in sequence. Returns the
    /// bytes of coded data it holds and the restart markers passed.
    private mutating func walkEntropyCodedData(
        from start: Int, expectedRestarts: Int, bad: (String) -> JPEGError
    ) throws(JPEGError) -> (bytes: Int, restarts: Int) {
        guard let base = data.baseAddress else { preconditionFailure("a walker's data is never empty") }
        var position = start, bytes = 0, restarts = 0
        while true {
            guard position < data.count, let found = memchr(base + position, 0xFF, data.count - position) else {
                throw JPEGError(
                    kind: .truncated,
                    message: "the data ends at offset \(data.count) inside the entropy-coded data of scan \(scans), before EOI")
            }
            let ff = base.distance(to: UnsafeRawPointer(found))
            bytes += ff - position
            var next = ff + 1
            while next < data.count, data[next] == 0xFF { next += 1 }
            guard next < data.count else {
                throw JPEGError(
                    kind: .truncated,
                    message: "the data ends at offset \(data.count) inside the entropy-coded data of scan \(scans), before EOI")
            }
            let byte = data[next]
            if byte == 0 {
                bytes += 1  // a stuffed FF data byte
                position = next + 1
                continue
            }
            if (0xD0...0xD7).contains(byte), restarts < expectedRestarts {
                let expected = UInt8(0xD0 + restarts % 8)
                guard byte == expected else {
                    throw bad("has \(JPEGSegment.name(of: byte)) at offset \(next - 1) where \(JPEGSegment.name(of: expected)) belongs")
                }
                restarts += 1
                position = next + 1
                continue
            }
            // Any other marker ends the scan (a restart marker after the last interval too,
            // which libjpeg then skips).
            reader.position = ff
            return (bytes, restarts)
        }
    }
}
