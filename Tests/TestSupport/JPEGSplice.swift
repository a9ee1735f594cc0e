/// Builds unusual but valid (or deliberately broken) JPEGs from ordinary ones by splicing
/// marker segments into them, as cameras and Photoshop do with metadata.
public enum JPEGSplice {
    /// The largest marker segment: FF, marker, a 16-bit length of at most 65535.
    public static let largestSegment = 65537

    /// The offset of the first marker in `markers`, walking the segments from SOI (a JPEG this
    /// test made: no fill bytes, the marker sought comes before the first scan).
    public static func offset(of markers: Set<UInt8>, in jpeg: [UInt8]) -> Int {
        var index = 2
        while index + 4 <= jpeg.count {
            precondition(jpeg[index] == 0xFF, "not at a marker at offset \(index)")
            if markers.contains(jpeg[index + 1]) { return index }
            index += 2 + (Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3]))
        }
        preconditionFailure("none of the markers \(markers) before the end")
    }

    /// The offset of the frame header (SOF0, SOF1 or SOF2).
    public static func frameOffset(in jpeg: [UInt8]) -> Int { offset(of: [0xC0, 0xC1, 0xC2], in: jpeg) }

    /// The offset just past the first SOS segment, where its entropy-coded data begins.
    public static func scanDataOffset(in jpeg: [UInt8]) -> Int {
        let sos = offset(of: [0xDA], in: jpeg)
        return sos + 2 + (Int(jpeg[sos + 2]) << 8 | Int(jpeg[sos + 3]))
    }

    /// `jpeg` with `segments` right before its frame header.
    public static func inserting(_ segments: [UInt8], beforeFrameOf jpeg: [UInt8]) -> [UInt8] {
        let at = frameOffset(in: jpeg)
        return Array(jpeg[..<at]) + segments + Array(jpeg[at...])
    }

    /// APP1 segments of `totalBytes` in all (at least 4), each at most the largest a segment can
    /// be: extended XMP as Photoshop writes it. With `lastFull` the last one is a whole
    /// 65537-byte segment. The payloads hold every byte value, FF D9 included.
    public static func metadata(totalBytes: Int, lastFull: Bool = false) -> [UInt8] {
        var sizes: [Int] = []
        var remaining = totalBytes - (lastFull ? largestSegment : 0)
        precondition(remaining == 0 || remaining >= 4, "segments are at least 4 bytes")
        while remaining > 0 {
            var size = min(remaining, largestSegment)
            if (1...3).contains(remaining - size) { size -= 4 }
            sizes.append(size)
            remaining -= size
        }
        if lastFull { sizes.append(largestSegment) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(totalBytes)
        let prefix = Array("http://ns.adobe.com/xmp/extension/\0".utf8)
        for size in sizes {
            let length = size - 2
            bytes += [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)]
            let payload = size - 4
            let head = min(payload, prefix.count)
            bytes += prefix[..<head]
            for i in head..<payload { bytes.append(UInt8(truncatingIfNeeded: i &* 37 &+ 11)) }
        }
        return bytes
    }

    /// `count` COM segments of `payload` bytes each (4 + `payload` bytes with the marker and length).
    public static func tinySegments(_ count: Int, payload: Int = 0) -> [UInt8] {
        let segment = [0xFF, 0xFE, UInt8((payload + 2) >> 8), UInt8((payload + 2) & 0xFF)] + [UInt8](repeating: 0x2E, count: payload)
        return Array([[UInt8]](repeating: segment, count: count).joined())
    }
}
