/// A capture's edit of a HEIC: the HEIC decoded whole and upright (its `irot`/`imir`; an EXIF
/// Orientation ignored, see `HEIF`), then edited and encoded as a JPEG's re-encode is (step 3
/// of `PhotoEditor`): there is no lossless crop of HEVC data into a JPEG.
extension PhotoEditor {
    /// `edit` applied to `heif`: a baseline JPEG at the edit's quality, 4:2:0, upright, with
    /// the HEIC's ICC profile when it is an RGB one and no other metadata. Throws
    /// `.invalidEdit` for an edit `validate` refuses or a crop outside the upright image,
    /// `.heif` with the `HEIFError` for an original that cannot be read.
    public func edit(heif: [UInt8], _ edit: PhotoEdit) throws(PhotoEditError) -> EditedPhoto {
        try validate(edit)
        let header: HEIFHeader
        do throws(HEIFError) {
            header = try HEIF.header(of: heif, options: options)
        } catch {
            throw PhotoEditError(heif: error)
        }
        let crop = try edit.crop(inUprightWidth: header.width, height: header.height)
        let decoded: HEIF.Decoded
        do throws(HEIFError) {
            decoded = try HEIF.decode(heif, options: options)
        } catch {
            throw PhotoEditError(heif: error)
        }
        let layout = EditLayout(edit, crop: crop, imageWidth: decoded.image.width, imageHeight: decoded.image.height)
        let image = layout.render(decoded.image, background: edit.background)
        let segments = decoded.profile.flatMap { $0.colorSpace == "RGB " ? $0.segments : nil } ?? []
        do throws(JPEGError) {
            let data = try JPEG.encode(image, quality: edit.quality, subsampling: .s420, segments: segments)
            return EditedPhoto(data: data, width: image.width, height: image.height, lossless: false)
        } catch {
            throw PhotoEditError(image: error)
        }
    }
}
