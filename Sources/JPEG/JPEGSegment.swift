#if canImport(Glibc)
import Glibc
#endif

/// One marker in a JPEG: its byte after 0xFF, where it starts, and where its payload lies.
struct JPEGSegment {
    /// The marker byte after 0xFF, e.g. 0xE1 for APP1.
    let marker: UInt8
    /// The offset of the marker's 0xFF (the last one, after any fill bytes).
    let offset: Int
    /// The payload's byte range in the data, after the two length bytes; empty (at the end of
    /// the marker) for the markers that stand alone.
    let payload: Range<Int>

    /// The offset just past the segment.
    var end: Int { payload.upperBound }

    /// Whether `marker` has no length or payload: SOI, EOI, RSTn, TEM.
    static func standsAlone(_ marker: UInt8) -> Bool {
        marker == 0x01 || (0xD0...0xD9).contains(marker)
    }

    /// The marker's name from the JPEG standard (T.81 table B.1), for messages.
    static func name(of marker: UInt8) -> String {
        switch marker {
        case 0xC4: "DHT"
        case 0xC8: "JPG"
        case 0xCC: "DAC"
        case 0xC0...0xCF: "SOF\(marker - 0xC0)"
        case 0xD0...0xD7: "RST\(marker - 0xD0)"
        case 0xD8: "SOI"
        case 0xD9: "EOI"
        case 0xDA: "SOS"
        case 0xDB: "DQT"
        case 0xDC: "DNL"
        case 0xDD: "DRI"
        case 0xDE: "DHP"
        case 0xDF: "EXP"
        case 0xE0...0xEF: "APP\(marker - 0xE0)"
        case 0xF0...0xFD: "JPG\(marker - 0xF0)"
        case 0xFE: "COM"
        case 0x01: "TEM"
        default: "marker 0x\(hex(marker))"
        }
    }

    /// Two lower-case hex digits.
    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }

    /// The segments between SOI and the first SOS; stops quietly at anything malformed or cut short.
    static func headerSegments(of data: UnsafeRawBufferPointer, _ body: (JPEGSegment) -> Void) {
        guard data.count >= 2, data[0] == 0xFF, data[1] == 0xD8 else { return }
        var reader = JPEGSegmentReader(data: data, position: 2)
        while let segment = try? reader.next(), segment.marker != 0xDA, segment.marker != 0xD9 {
            body(segment)
        }
    }

    /// True when an APP14 "Adobe" segment is present: such files store CMYK inverted (255 = no ink).
    static func hasAdobeMarker(in data: [UInt8]) -> Bool {
        data.withUnsafeBytes { buffer in
            var found = false
            headerSegments(of: buffer) { segment in
                if !found, isAdobe(segment, in: buffer) { found = true }
            }
            return found
        }
    }

    /// Whether `segment` is an APP14 that starts "Adobe".
    static func isAdobe(_ segment: JPEGSegment, in data: UnsafeRawBufferPointer) -> Bool {
        segment.marker == 0xEE && segment.payload.count >= 5
            && data[segment.payload.prefix(5)].elementsEqual("Adobe".utf8)
    }

    /// Whether `segment` is an APP2 that starts "ICC_PROFILE\0" and holds its two chunk bytes.
    static func isICCProfile(_ segment: JPEGSegment, in data: UnsafeRawBufferPointer) -> Bool {
        segment.marker == 0xE2 && segment.payload.count >= ICCProfile.chunkHeader
            && data[segment.payload.prefix(12)].elementsEqual(ICCProfile.identifier)
    }

    /// Whether `segment` is an APP1 that starts "Exif\0\0" (not, e.g., an XMP APP1).
    static func isExif(_ segment: JPEGSegment, in data: UnsafeRawBufferPointer) -> Bool {
        segment.marker == 0xE1 && segment.payload.count >= 6
            && data[segment.payload.prefix(6)].elementsEqual("Exif\0\0".utf8)
    }
}

/// Reads marker segments one after another, each in constant time however long it is: the
/// walk over a header of any size is linear and never looks at a byte twice.
///
/// Bytes between two segments that begin no marker are skipped the way libjpeg's
/// `next_marker` skips them ("Corrupt JPEG data: N extraneous bytes before marker"): up to the
/// next FF followed by a byte that is neither 00 nor FF, an FF 00 among them included. Every
/// decoder and viewer opens such a file; the runs skipped are recorded (`extraneous`) so that
/// the decoder can be handed the file without them, and they are bounded in all by
/// `maxExtraneousBytes`, past which the data is refused as not a JPEG's segments.
struct JPEGSegmentReader {
    let data: UnsafeRawBufferPointer
    /// Where the next marker (or its fill bytes) is expected.
    var position: Int
    /// `DecodeOptions.maxExtraneousBytes`: the most bytes skipped between segments in all.
    let maxExtraneousBytes: Int
    /// The runs of extraneous bytes skipped so far, in order; each ends where the fill bytes
    /// or the FF of the marker after it begin. Empty (and never allocated) for a well-formed file.
    private(set) var extraneous: [Range<Int>] = []
    /// The bytes in `extraneous`.
    private(set) var extraneousBytes = 0

    init(data: UnsafeRawBufferPointer, position: Int, maxExtraneousBytes: Int = DecodeOptions.defaultMaxExtraneousBytes) {
        self.data = data
        self.position = position
        self.maxExtraneousBytes = maxExtraneousBytes
    }

    /// The next marker segment, or nil when the data ends exactly here.
    ///
    /// Throws when the segment's length runs past the end, when the data ends before a marker,
    /// or when the extraneous bytes before it are more than `maxExtraneousBytes` allows.
    mutating func next() throws(JPEGError) -> JPEGSegment? {
        guard position < data.count else { return nil }
        let offset = try markerOffset()
        let marker = data[offset + 1]
        // Named only for a message: formatting it for each of many segments would cost more than the walk.
        var name: String { JPEGSegment.name(of: marker) }
        if JPEGSegment.standsAlone(marker) {
            position = offset + 2
            return JPEGSegment(marker: marker, offset: offset, payload: position..<position)
        }
        guard offset + 4 <= data.count else {
            throw JPEGError(kind: .truncated, message: "the \(name) segment at offset \(offset) is cut off before its length")
        }
        let length = Int(data[offset + 2]) << 8 | Int(data[offset + 3])
        guard length >= 2 else {
            throw JPEGError(kind: .corrupt, message: "the \(name) segment at offset \(offset) declares a length of \(length) (at least 2)")
        }
        let end = offset + 2 + length
        guard end <= data.count else {
            throw JPEGError(
                kind: .truncated,
                message: "the \(name) segment at offset \(offset) declares \(length) bytes, but only \(data.count - offset - 2) remain")
        }
        position = end
        return JPEGSegment(marker: marker, offset: offset, payload: (offset + 4)..<end)
    }

    /// The offset of the FF (the last of any fill bytes) of the marker at `position`, after
    /// skipping any extraneous bytes before it.
    @inline(__always)
    private mutating func markerOffset() throws(JPEGError) -> Int {
        if data[position] == 0xFF {
            // Any number of 0xFF fill bytes may precede a marker.
            var index = position
            while index + 1 < data.count, data[index + 1] == 0xFF { index += 1 }
            guard index + 1 < data.count else {
                throw JPEGError(kind: .truncated, message: "the data ends at offset \(data.count) inside a marker")
            }
            if data[index + 1] != 0 { return index }
        }
        return try skipExtraneous()
    }

    /// Skips the extraneous bytes from `position` to the next marker, as libjpeg does, and
    /// returns the offset of that marker's last FF. Linear: each byte is looked at once (memchr
    /// for FF), and never more than the bytes still allowed.
    @inline(never)  // rare: out of the way of the loop over well-formed segments
    private mutating func skipExtraneous() throws(JPEGError) -> Int {
        guard let base = data.baseAddress else { preconditionFailure("a reader's data is never empty") }
        let start = position
        let allowed = maxExtraneousBytes - extraneousBytes
        // The marker's first FF may be at most `allowed` bytes on.
        let limit = min(data.count, start + allowed + 1)
        var search = start
        while true {
            guard search < limit, let found = memchr(base + search, 0xFF, limit - search) else {
                if limit == data.count {
                    throw JPEGError(
                        kind: .truncated,
                        message: "the data ends at offset \(data.count) in \(data.count - start) extraneous bytes from offset \(start), before any marker")
                }
                throw JPEGError(
                    kind: .corrupt,
                    message: "more than \(maxExtraneousBytes) extraneous bytes between marker segments: no marker within \(allowed) bytes of offset \(start)"
                        + (extraneousBytes > 0 ? " (after \(extraneousBytes) skipped before it)" : "")
                        + "; a JPEG's segments follow one another, with at most a few stray bytes between them")
            }
            let ff = base.distance(to: UnsafeRawPointer(found))
            var next = ff + 1
            while next < data.count, data[next] == 0xFF { next += 1 }
            guard next < data.count else {
                throw JPEGError(kind: .truncated, message: "the data ends at offset \(data.count) inside a marker")
            }
            guard data[next] == 0 else {
                extraneous.append(start..<ff)
                extraneousBytes += ff - start
                return next - 1
            }
            // FF 00 between segments is no marker either: libjpeg skips it too.
            search = next + 1
        }
    }
}
