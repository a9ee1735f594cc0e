/// Reads EXIF metadata from JPEG bytes without decoding pixels.
public enum EXIF {
    /// The Orientation tag (0x0112) of IFD0 in the APP1 Exif block, II or MM byte order; nil when absent or malformed.
    public static func orientation(in jpeg: [UInt8]) -> Int? {
        let header = Array("Exif\0\0".utf8)
        for segment in JPEGSegment.headerSegments(of: jpeg) where segment.marker == 0xE1 {
            guard segment.payload.count >= header.count,
                  jpeg[segment.payload.prefix(header.count)].elementsEqual(header)
            else { continue }  // e.g. an XMP APP1
            let tiff = TIFFReader(data: jpeg, start: segment.payload.lowerBound + header.count, end: segment.payload.upperBound)
            return tiff?.orientation()
        }
        return nil
    }
}
