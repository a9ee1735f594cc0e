/// One marker segment in a JPEG's header area: its marker byte and where its payload lies.
struct JPEGSegment {
    /// The marker byte after 0xFF, e.g. 0xE1 for APP1.
    let marker: UInt8
    /// The payload's byte range in the data, after the two length bytes.
    let payload: Range<Int>

    /// The segments between SOI and the first SOS; stops quietly at anything malformed or cut short.
    static func headerSegments(of data: [UInt8]) -> [JPEGSegment] {
        guard data.count >= 2, data[0] == 0xFF, data[1] == 0xD8 else { return [] }
        var segments: [JPEGSegment] = []
        var index = 2
        while index < data.count, data[index] == 0xFF {
            // Any number of 0xFF fill bytes may precede a marker.
            while index < data.count, data[index] == 0xFF { index += 1 }
            guard index < data.count else { break }
            let marker = data[index]
            index += 1
            switch marker {
            case 0xD9, 0xDA:
                // EOI or start of scan: the header area is over.
                return segments
            case 0x01, 0xD0...0xD7:
                // TEM and RSTn stand alone, without a length.
                continue
            default:
                guard index + 2 <= data.count else { return segments }
                let length = Int(data[index]) << 8 | Int(data[index + 1])
                let end = index + length
                guard length >= 2, end <= data.count else { return segments }
                segments.append(JPEGSegment(marker: marker, payload: (index + 2)..<end))
                index = end
            }
        }
        return segments
    }

    /// True when an APP14 "Adobe" segment is present: such files store CMYK inverted (255 = no ink).
    static func hasAdobeMarker(in data: [UInt8]) -> Bool {
        let adobe = Array("Adobe".utf8)
        return headerSegments(of: data).contains { segment in
            segment.marker == 0xEE && segment.payload.count >= adobe.count
                && data[segment.payload.prefix(adobe.count)].elementsEqual(adobe)
        }
    }
}
