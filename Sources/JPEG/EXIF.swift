/// Reads EXIF metadata from JPEG bytes without decoding pixels.
public enum EXIF {
    /// The Orientation tag (0x0112) of IFD0 in the APP1 Exif block, II or MM byte order; nil when absent or malformed.
    public static func orientation(in jpeg: [UInt8]) -> Int? {
        jpeg.withUnsafeBytes { orientation(in: $0) }
    }

    /// `orientation(in:)` of bytes in place (a memory map, a request frame).
    public static func orientation(in jpeg: UnsafeRawBufferPointer) -> Int? {
        var exif: JPEGSegment?
        JPEGSegment.headerSegments(of: jpeg) { segment in
            if exif == nil, JPEGSegment.isExif(segment, in: jpeg) { exif = segment }
        }
        guard let exif else { return nil }
        return orientation(ofExifPayload: jpeg, exif.payload)
    }

    /// The orientation in the APP1 payload at `payload` (which starts "Exif\0\0").
    static func orientation(ofExifPayload jpeg: UnsafeRawBufferPointer, _ payload: Range<Int>) -> Int? {
        // An APP1 payload is at most 65533 bytes: copied, so TIFFReader needs no pointer rules.
        let tiff = [UInt8](jpeg[(payload.lowerBound + 6)..<payload.upperBound])
        return TIFFReader(data: tiff, start: 0, end: tiff.count)?.orientation()
    }
}
