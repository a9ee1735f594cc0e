/// JPEG thumbnails of a HEIC: what GetRendition and the thumbnail worker make of a HEIC
/// original, by the same resize and encode as a JPEG's (`Thumbnailer.encode`).
///
/// The HEIC is decoded whole (libheif 1.15 has no reduced-scale decode), its limits checked
/// first from its boxes (`HEIF.header`), upright by its own transformations (`irot`/`imir`;
/// an EXIF Orientation is ignored, see `HEIF`); an alpha plane is composited on `background`.
/// Its ICC profile is kept when it is an RGB one, as a JPEG's is; nothing else (EXIF, GPS,
/// XMP) is carried over.
extension Thumbnailer {
    /// The thumbnails of `heif` at `sizes`, in that order, from one decode. Throws a
    /// `HEIFError` that names what is wrong; nothing is allocated for pixels before the
    /// limits have been checked.
    public func thumbnails(ofHEIF heif: UnsafeRawBufferPointer, sizes: [Target]) throws(HEIFError) -> [Output] {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let decoded = try HEIF.decode(heif, background: background, options: options)
        let image = decoded.image
        // Upright already: the plans' orientation is 1.
        let plans = Self.plans(width: image.width, height: image.height, orientation: 1, sizes)
        let profile = decoded.profile.flatMap { $0.colorSpace == "RGB " ? $0 : nil }
        do throws(JPEGError) {
            return try encode(image, plans: plans, sizes: sizes, gray: false, segments: profile?.segments ?? [])
        } catch {
            throw HEIFError(kind: .encodeFailed, message: "its thumbnail could not be encoded as JPEG: \(error.message)")
        }
    }

    /// `thumbnails(ofHEIF:sizes:)` of an array.
    public func thumbnails(ofHEIF heif: [UInt8], sizes: [Target]) throws(HEIFError) -> [Output] {
        try HEIF.inPlace(heif) { (buffer) throws(HEIFError) in try thumbnails(ofHEIF: buffer, sizes: sizes) }
    }

    /// About the most memory `thumbnails(ofHEIF:sizes:)` holds at once for `heif`, from its
    /// boxes alone: the decode's peak (`HEIFHeader.decodedBytes`) and the largest size's encode (`encodingBytes`). Throws
    /// what the header's checks throw.
    public func workingBytes(ofHEIF heif: UnsafeRawBufferPointer, sizes: [Target]) throws(HEIFError) -> Int {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let header = try HEIF.header(of: heif, options: options)
        let plans = Self.plans(width: header.width, height: header.height, orientation: 1, sizes)
        return header.decodedBytes + Self.encodingBytes(plans)
    }

    /// `workingBytes(ofHEIF:sizes:)` of an array.
    public func workingBytes(ofHEIF heif: [UInt8], sizes: [Target]) throws(HEIFError) -> Int {
        try HEIF.inPlace(heif) { (buffer) throws(HEIFError) in try workingBytes(ofHEIF: buffer, sizes: sizes) }
    }
}
