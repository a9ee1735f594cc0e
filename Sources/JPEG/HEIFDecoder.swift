import CHeif

/// One libheif context over bytes in place (`heif_context`, read without a copy) and its
/// primary image's handle, freed with it: the only place the JPEG module calls libheif, with
/// every `heif_error` checked in `check`.
///
/// Reading the context parses the boxes (`ftyp`, `meta` with its `iloc`, `iinf`, `iprp`…)
/// and decodes nothing. It is made with libheif's own limit on an image's edge set to
/// `DecodeOptions.maxPixels` (an edge longer than that is more pixels than the limit whatever
/// the other edge), and with one decoding thread: a decode holds one of its caller's slots,
/// each of which is a core.
final class HEIFDecoder {
    /// The most bytes of EXIF metadata read (for when the photo was taken); a larger block is
    /// not read.
    static let maxExifBytes = 1 << 20

    private let context: OpaquePointer
    private let handle: OpaquePointer

    /// libheif's plugins (libde265 for HEVC) loaded once per process.
    private static let initialised: Bool = {
        _ = heif_init(nil)
        return true
    }()

    /// A context of `data`, which must stay valid while it lives, and its primary image.
    init(_ data: UnsafeRawBufferPointer, options: DecodeOptions) throws(HEIFError) {
        _ = Self.initialised
        guard let context = heif_context_alloc() else {
            throw HEIFError(kind: .corrupt, message: "libheif could not make a context (out of memory)")
        }
        heif_context_set_maximum_image_size_limit(context, Int32(clamping: min(options.maxPixels, Int(Int32.max))))
        heif_context_set_max_decoding_threads(context, 1)
        do throws(HEIFError) {
            try Self.check(heif_context_read_from_memory_without_copy(context, data.baseAddress, data.count, nil), "reading its boxes")
        } catch {
            heif_context_free(context)
            throw error
        }
        var handle: OpaquePointer?
        let status = heif_context_get_primary_image_handle(context, &handle)
        guard status.code == heif_error_Ok, let handle else {
            heif_context_free(context)
            try Self.check(status, "finding its primary image")
            throw HEIFError(kind: .corrupt, message: "it has no primary image")
        }
        self.context = context
        self.handle = handle
    }

    deinit {
        heif_image_handle_release(handle)
        heif_context_free(context)
    }

    /// The primary image's sizes and what it carries, from its boxes.
    func header() -> HEIFHeader {
        HEIFHeader(
            codedWidth: Int(heif_image_handle_get_ispe_width(handle)), codedHeight: Int(heif_image_handle_get_ispe_height(handle)),
            width: Int(heif_image_handle_get_width(handle)), height: Int(heif_image_handle_get_height(handle)),
            hasAlpha: heif_image_handle_has_alpha_channel(handle) != 0,
            lumaBits: Int(heif_image_handle_get_luma_bits_per_pixel(handle)),
            hasICCProfile: Self.iccTypes.contains(heif_image_handle_get_color_profile_type(handle).rawValue))
    }

    /// Decodes the primary image whole with its transformations applied (`irot`, `imir`,
    /// `clap`, in the order its `ipma` lists them: upright as the file says it is shown), as
    /// 8-bit RGB (RGBA when `alpha`; deeper samples reduced), and copies the pixels out into a
    /// new buffer without row padding: `width` × `height` × 3 (or 4) bytes.
    func decode(alpha: Bool) throws(HEIFError) -> (width: Int, height: Int, pixels: [UInt8]) {
        guard let decoding = heif_decoding_options_alloc() else {
            throw HEIFError(kind: .corrupt, message: "libheif could not make its decoding options (out of memory)")
        }
        defer { heif_decoding_options_free(decoding) }
        decoding.pointee.ignore_transformations = 0
        decoding.pointee.convert_hdr_to_8bit = 1
        var decoded: OpaquePointer?
        try Self.check(
            heif_decode_image(handle, &decoded, heif_colorspace_RGB, alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, decoding),
            "decoding its primary image")
        guard let image = decoded else { throw HEIFError(kind: .corrupt, message: "libheif decoded no image") }
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        let channels = alpha ? 4 : 3
        var stride: Int32 = 0
        guard width > 0, height > 0, heif_image_get_bits_per_pixel_range(image, heif_channel_interleaved) == 8,
            let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride), Int(stride) >= width * channels
        else {
            throw HEIFError(kind: .corrupt, message: "libheif decoded no 8-bit interleaved plane of \(width)×\(height)")
        }
        let row = width * channels
        let pixels = [UInt8](unsafeUninitializedCapacity: row * height) { buffer, initialized in
            for y in 0..<height {
                (buffer.baseAddress! + y * row).update(from: plane + y * Int(stride), count: row)
            }
            initialized = row * height
        }
        return (width, height, pixels)
    }

    /// The raw ICC profile of a `colr` box of type `prof` or `rICC`; nil when there is none
    /// (none at all, or `nclx` colour parameters only).
    func iccProfile() throws(HEIFError) -> [UInt8]? {
        guard Self.iccTypes.contains(heif_image_handle_get_color_profile_type(handle).rawValue) else { return nil }
        let size = heif_image_handle_get_raw_color_profile_size(handle)
        guard size > 0, size <= ICCProfile.maxBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let status = bytes.withUnsafeMutableBytes { heif_image_handle_get_raw_color_profile(handle, $0.baseAddress) }
        try Self.check(status, "reading its ICC profile")
        return bytes
    }

    /// The TIFF block of the primary image's first `Exif` metadata item (its first four bytes,
    /// the offset of the TIFF header, skipped); nil when there is none, it is over
    /// `maxExifBytes`, or it does not read.
    func exifTIFF() -> [UInt8]? {
        guard heif_image_handle_get_number_of_metadata_blocks(handle, "Exif") > 0 else { return nil }
        var id: heif_item_id = 0
        guard heif_image_handle_get_list_of_metadata_block_IDs(handle, "Exif", &id, 1) == 1 else { return nil }
        let size = heif_image_handle_get_metadata_size(handle, id)
        guard size > 4, size <= Self.maxExifBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let status = bytes.withUnsafeMutableBytes { heif_image_handle_get_metadata(handle, id, $0.baseAddress) }
        guard status.code == heif_error_Ok else { return nil }
        let offset = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard offset <= size - 4 else { return nil }
        return Array(bytes[(4 + offset)...])
    }

    /// The `colr` types that carry an ICC profile.
    private static let iccTypes: Set<UInt32> = [heif_color_profile_type_prof.rawValue, heif_color_profile_type_rICC.rawValue]

    /// Throws for a libheif error other than `heif_error_Ok`, with libheif's words and what was
    /// being done.
    static func check(_ status: heif_error, _ operation: String) throws(HEIFError) {
        guard status.code != heif_error_Ok else { return }
        let words = status.message.map { String(cString: $0) } ?? "error \(status.code.rawValue)"
        throw HEIFError(kind: kind(of: status), message: "\(words) (libheif error \(status.code.rawValue).\(status.subcode.rawValue), \(operation))")
    }

    /// What a libheif error means for the sender.
    static func kind(of status: heif_error) -> HEIFError.Kind {
        switch status.subcode {
        case heif_suberror_End_of_data: .truncated
        default: .corrupt
        }
    }
}
