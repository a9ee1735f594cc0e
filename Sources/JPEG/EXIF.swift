/// Reads EXIF metadata from JPEG bytes without decoding pixels.
public enum EXIF {
    /// The Orientation tag (0x0112) of IFD0 in the APP1 Exif block, II or MM byte order; nil when absent or malformed.
    public static func orientation(in jpeg: [UInt8]) -> Int? {
        jpeg.withUnsafeBytes { orientation(in: $0) }
    }

    /// `orientation(in:)` of bytes in place (a memory map, a request frame).
    public static func orientation(in jpeg: UnsafeRawBufferPointer) -> Int? {
        tiff(in: jpeg)?.orientation()
    }

    /// The TIFF block of the first APP1 Exif segment of the header; nil when there is none.
    static func tiff(in jpeg: UnsafeRawBufferPointer) -> TIFFReader? {
        var exif: JPEGSegment?
        JPEGSegment.headerSegments(of: jpeg) { segment in
            if exif == nil, JPEGSegment.isExif(segment, in: jpeg) { exif = segment }
        }
        return exif.flatMap { tiff(ofExifPayload: jpeg, $0.payload) }
    }

    /// The TIFF block in the APP1 payload at `payload` (which starts "Exif\0\0").
    static func tiff(ofExifPayload jpeg: UnsafeRawBufferPointer, _ payload: Range<Int>) -> TIFFReader? {
        // An APP1 payload is at most 65533 bytes: copied, so TIFFReader needs no pointer rules.
        let tiff = [UInt8](jpeg[(payload.lowerBound + 6)..<payload.upperBound])
        return TIFFReader(data: tiff, start: 0, end: tiff.count)
    }
}
