/// Applies a `PhotoEdit` to a JPEG: the capture flow's crop, zoom and shape, as a pure function
/// of the bytes and the edit.
///
/// The pipeline:
/// 1. The edit is checked (`validate`), then the header read under `options` (the pixel limit,
///    from the frame header, before anything is allocated for the pixels), the crop checked
///    against the upright size, and the whole structure walked (cut-off data, the
///    progressive-scan limit, a broken segment), as `Thumbnailer` does.
/// 2. An edit that is only a crop (zoom 1, `.rectangle`, no output size), where
///    `LosslessCrop` says it is exact, is made on the DCT coefficients (tjTransform): the
///    original's pixels, turned upright losslessly for any of the 8 EXIF orientations.
///    `EditedPhoto.lossless` is then true.
/// 3. Otherwise the whole image is decoded at full size (grey as RGB, CMYK and YCCK converted
///    to RGB), turned upright for its EXIF orientation (all 8), edited (`PhotoEdit`,
///    `EditLayout`: `RGBImage.cropped`, then `RGBImage.resized`, area-averaged down and
///    bilinear up, once from the original pixels to the output) and encoded as a baseline JPEG
///    at the edit's quality: 4:2:0, or one grey channel when the original is grey and no
///    colour shows besides it (no background, or a grey one).
///
/// Either way the output is upright and carries no EXIF (so no GPS, no orientation), no XMP,
/// no comments: only JFIF and the original's ICC profile, when it describes the output's
/// samples (an RGB profile for a colour output, a grey one for a grey output; a CMYK
/// original's goes, as its pixels were converted without it).
///
/// An identity edit (`PhotoEdit.isIdentity`) is the caller's to skip; given one, the editor
/// crops the whole image, so the answer is a lossless copy without the metadata where the crop
/// at (0, 0) is lossless, a re-encode of the upright image elsewhere.
///
/// Memory, for an original of P pixels: the re-encode holds the decode (3P bytes; 4P more for
/// CMYK while it is converted) and its upright copy (3P) for orientations 2...8, then the
/// cropped part and the output; for a progressive original libjpeg also holds every DCT
/// coefficient while it decodes (2 bytes each: 3P for 4:2:0). The lossless crop holds the
/// coefficients only (3P for 4:2:0, 6P for 4:4:4) and the output.
public struct PhotoEditor: Sendable {
    /// The limits the original is read under.
    public let options: DecodeOptions

    /// An editor reading originals under `options`.
    public init(options: DecodeOptions = .init()) {
        self.options = options
    }

    /// Refuses what no image could make valid, naming the value: an empty crop, a zoom that is
    /// not finite or outside (0, 64], an output size outside 1...8192, a quality outside
    /// 1...100. Whether the crop lies inside the picture needs the picture: `edit` says.
    public func validate(_ edit: PhotoEdit) throws(PhotoEditError) {
        try edit.check()
    }

    /// `edit` applied to `jpeg` (see the type for how).
    ///
    /// Throws `.invalidEdit` for an edit `validate` refuses or a crop outside the upright image
    /// ("crop 10,10,5000,20 is outside the upright image (4000×3000)"), `.image` with the
    /// `JPEGError` for an original that cannot be read.
    public func edit(_ jpeg: [UInt8], _ edit: PhotoEdit) throws(PhotoEditError) -> EditedPhoto {
        let result = jpeg.withUnsafeBytes { buffer -> Result<EditedPhoto, PhotoEditError> in
            do throws(PhotoEditError) { return .success(try self.edit(buffer, edit)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// `edit(_:_:)` of bytes in place (a memory map, a request frame).
    public func edit(_ jpeg: UnsafeRawBufferPointer, _ edit: PhotoEdit) throws(PhotoEditError) -> EditedPhoto {
        try validate(edit)
        let handle = try reading { () throws(JPEGError) in try TurboJPEGHandle(.decompress) }
        var walker = try reading { () throws(JPEGError) in try JPEG.walker(of: jpeg, options: options) }
        let header = try reading { () throws(JPEGError) in try JPEG.header(of: jpeg, walker: &walker, options: options, handle: handle) }
        let upright = JPEG.uprightSize(width: header.width, height: header.height, orientation: header.orientation)
        let crop = try edit.crop(inUprightWidth: upright.width, height: upright.height)
        let end = try reading { () throws(JPEGError) in try walker.readScans() }
        let profile = ICCProfile(chunks: walker.iccChunks, in: jpeg)
        if !edit.changesPixels, let frame = walker.frame, let lossless = LosslessCrop(crop: crop, header: header, frame: frame) {
            let segments = Self.segments(of: profile, gray: header.colorSpace == .gray)
            let data = try reading { () throws(JPEGError) in
                try JPEG.transform(jpeg, walker: walker, end: end, crop: lossless, segments: segments, options: options)
            }
            return EditedPhoto(data: data, width: crop.width, height: crop.height, lossless: true)
        }
        // The stored pixels are a temporary: only the upright copy outlives the turn.
        let pixels = try reading { () throws(JPEGError) in
            try JPEG.decodePixels(
                jpeg, walker: walker, header: header, end: end, size: (header.width, header.height), options: options, handle: handle)
        }.oriented(header.orientation)
        let layout = EditLayout(edit, crop: crop, imageWidth: upright.width, imageHeight: upright.height)
        let image = layout.render(pixels, background: edit.background)
        let gray = header.colorSpace == .gray && (!layout.showsBackground || edit.background.isGrey)
        let segments = Self.segments(of: profile, gray: gray)
        let data = try reading { () throws(JPEGError) in
            try JPEG.encode(image, quality: edit.quality, subsampling: gray ? .gray : .s420, segments: segments)
        }
        return EditedPhoto(data: data, width: image.width, height: image.height, lossless: false)
    }

    /// The APP2 segments of `profile` when it describes the output's samples (grey or RGB).
    private static func segments(of profile: ICCProfile?, gray: Bool) -> [UInt8] {
        guard let profile, profile.colorSpace == (gray ? "GRAY" : "RGB ") else { return [] }
        return profile.segments
    }

    /// `body`'s value, its `JPEGError` an `.image` error.
    private func reading<T>(_ body: () throws(JPEGError) -> T) throws(PhotoEditError) -> T {
        do throws(JPEGError) { return try body() } catch { throw PhotoEditError(image: error) }
    }
}
