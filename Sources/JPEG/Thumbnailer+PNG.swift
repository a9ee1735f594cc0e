/// JPEG thumbnails of a PNG: what GetRendition and the thumbnail worker make of a PNG original,
/// by the same resize and encode as a JPEG's (`Thumbnailer.encode`).
///
/// The PNG is decoded whole (a PNG has no reduced-scale decode), its header's pixel and byte
/// limits checked first (`PNG.header`); its transparency is composited on `background` (row by
/// row as it is decoded, `PNG.decode`); a grey
/// PNG on a grey background is encoded as a grey JPEG. Its iCCP profile is kept when its colour
/// space is the output's, as a JPEG's is; nothing else (text, EXIF, time) is carried over.
extension Thumbnailer {
    /// The thumbnails of `png` at `sizes`, in that order, from one decode. Throws a `PNGError`
    /// that names what is wrong (not a PNG, over a limit, cut off, a bad CRC, damaged data);
    /// nothing is allocated for pixels before the header's limits have been checked.
    public func thumbnails(ofPNG png: UnsafeRawBufferPointer, sizes: [Target]) throws(PNGError) -> [Output] {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let decoded = try PNG.decode(png, background: background, options: options)
        let header = decoded.header
        let plans = Self.plans(width: header.width, height: header.height, orientation: 1, sizes)
        let gray = header.isGray && background.isGray
        let profile = decoded.profile.flatMap { $0.colorSpace == (gray ? "GRAY" : "RGB ") ? $0 : nil }
        do throws(JPEGError) {
            return try encode(decoded.image, plans: plans, sizes: sizes, gray: gray, segments: profile?.segments ?? [])
        } catch {
            throw PNGError(kind: .encodeFailed, message: "its thumbnail could not be encoded as JPEG: \(error.message)")
        }
    }

    /// `thumbnails(ofPNG:sizes:)` of an array.
    public func thumbnails(ofPNG png: [UInt8], sizes: [Target]) throws(PNGError) -> [Output] {
        try PNG.inPlace(png) { (buffer) throws(PNGError) in try thumbnails(ofPNG: buffer, sizes: sizes) }
    }

    /// About the most memory `thumbnails(ofPNG:sizes:)` holds at once for `png`, from its
    /// header alone: the decoded pixels (`PNGHeader.heldBytes`) and the largest size's encode
    /// (`encodingBytes`). Throws what the header's checks throw.
    public func workingBytes(ofPNG png: UnsafeRawBufferPointer, sizes: [Target]) throws(PNGError) -> Int {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let header = try PNG.header(of: png, options: options)
        let plans = Self.plans(width: header.width, height: header.height, orientation: 1, sizes)
        return header.heldBytes + Self.encodingBytes(plans)
    }

    /// `workingBytes(ofPNG:sizes:)` of an array.
    public func workingBytes(ofPNG png: [UInt8], sizes: [Target]) throws(PNGError) -> Int {
        try PNG.inPlace(png) { (buffer) throws(PNGError) in try workingBytes(ofPNG: buffer, sizes: sizes) }
    }
}
