/// Reads HEIC/HEIF photos (what iPhones and many Android phones save) with libheif and
/// libde265, under the limits of `DecodeOptions`: the boxes are parsed and the primary image's
/// coded size (`ispe`) checked against the pixel and decoded-byte limits before any pixel is
/// decoded, so a file claiming a huge picture costs its boxes read.
///
/// Orientation: a HEIF image is shown as its transformative properties say (`irot`, `imir`,
/// `clap`, applied in the order its `ipma` lists them), and libheif applies them as it decodes,
/// so a decoded HEIC is upright. An EXIF Orientation tag in its `Exif` item is never applied:
/// MIAF (ISO/IEC 23000-22, 7.3.10.1) says a file should express no transformation in Exif and
/// that a renderer shall ignore one that is there. Phones write both, the tag describing the
/// same rotation as `irot`, so applying it as well would turn the picture twice.
///
/// Outputs are JPEG (`Thumbnailer.thumbnails(ofHEIF:sizes:)`).
public enum HEIF {
    /// The major brands of HEIF still images recognised (ISO/IEC 23008-12 and its HEVC brands).
    public static let brands: Set<String> = ["heic", "heix", "heim", "heis", "mif1", "msf1"]

    /// True when the bytes start with an `ftyp` box whose major brand is one of `brands`.
    public static func sniff(_ data: UnsafeRawBufferPointer) -> Bool {
        guard data.count >= 12, String(decoding: data[4..<8], as: UTF8.self) == "ftyp" else { return false }
        return brands.contains(String(decoding: data[8..<12], as: UTF8.self))
    }

    /// `sniff` of an array.
    public static func sniff(_ data: [UInt8]) -> Bool { data.withUnsafeBytes { sniff($0) } }

    /// The primary image's header, from the boxes alone (nothing decoded): refuses a file
    /// whose boxes do not parse or run past its end, a primary image over the pixel limit or
    /// whose decode would hold more than the byte limit.
    public static func header(of data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) throws(HEIFError) -> HEIFHeader {
        try checkLimits(opened(data, options: options).header(), canvas: HEIFCanvas.of(data), options: options)
    }

    /// `header` of an array.
    public static func header(of data: [UInt8], options: DecodeOptions = .init()) throws(HEIFError) -> HEIFHeader {
        try inPlace(data) { (buffer) throws(HEIFError) in try header(of: buffer, options: options) }
    }

    /// Checks a whole HEIC: `header`'s checks, then a decode of the primary image, which reads
    /// every byte of its coded data (a tile or an extent past the file's end, or data libde265
    /// cannot decode, is refused). Holds `HEIFHeader.decodedBytes` while it decodes.
    public static func validate(_ data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) throws(HEIFError) -> HEIFHeader {
        let decoder = try opened(data, options: options)
        let header = try checkLimits(decoder.header(), canvas: HEIFCanvas.of(data), options: options)
        _ = try decoder.decode(alpha: false)
        return header
    }

    /// `validate` of an array.
    public static func validate(_ data: [UInt8], options: DecodeOptions = .init()) throws(HEIFError) -> HEIFHeader {
        try inPlace(data) { (buffer) throws(HEIFError) in try validate(buffer, options: options) }
    }

    /// When the photo was taken (`EXIF.takenAt`'s form) from its `Exif` item; nil when it has
    /// none, or it does not read. Nothing is decoded.
    public static func takenAt(in data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) -> String? {
        guard let decoder = try? opened(data, options: options), let tiff = decoder.exifTIFF() else { return nil }
        return TIFFReader(data: tiff, start: 0, end: tiff.count)?.takenAt()
    }

    /// One decoded HEIC: its pixels, upright, and its ICC profile.
    public struct Decoded: Sendable {
        /// The header it was decoded under.
        public let header: HEIFHeader
        /// The pixels, RGB, upright (its transformations applied), alpha composited.
        public let image: RGBImage
        /// The `colr` box's ICC profile, nil when it has none.
        public let profile: ICCProfile?
    }

    /// Decodes the primary image whole, upright, its transparency (when it has an alpha plane)
    /// composited on `background`, after `header`'s checks.
    public static func decode(
        _ data: UnsafeRawBufferPointer, background: RGBColor = .white, options: DecodeOptions = .init()
    ) throws(HEIFError) -> Decoded {
        let decoder = try opened(data, options: options)
        let header = try checkLimits(decoder.header(), canvas: HEIFCanvas.of(data), options: options)
        var (width, height, pixels) = try decoder.decode(alpha: header.hasAlpha)
        if header.hasAlpha { PNG.composite(&pixels, count: width * height, on: background) }
        let profile = try decoder.iccProfile().map { ICCProfile(bytes: $0) }
        return Decoded(header: header, image: RGBImage(width: width, height: height, pixels: pixels), profile: profile)
    }

    /// `decode` of an array.
    public static func decode(_ data: [UInt8], background: RGBColor = .white, options: DecodeOptions = .init()) throws(HEIFError) -> Decoded {
        try inPlace(data) { (buffer) throws(HEIFError) in try decode(buffer, background: background, options: options) }
    }

    /// The file's context, its boxes read; refuses what is not a HEIF first.
    static func opened(_ data: UnsafeRawBufferPointer, options: DecodeOptions) throws(HEIFError) -> HEIFDecoder {
        guard sniff(data) else {
            let brand = data.count >= 12 ? String(decoding: data[8..<12], as: UTF8.self) : ""
            throw HEIFError(
                kind: .notHEIF,
                message: brand.isEmpty ? "data does not start with an ftyp box" : "data does not start with an ftyp box of a HEIF brand (major brand \"\(brand)\")")
        }
        return try HEIFDecoder(data, options: options)
    }

    /// Refuses a header over the pixel or byte limit, or with no size. A derived primary image
    /// (a grid of tiles, an overlay) is decoded into its `canvas`, which is what is checked
    /// when it is larger than its `ispe`.
    static func checkLimits(_ header: HEIFHeader, canvas derived: HEIFCanvas.Canvas, options: DecodeOptions) throws(HEIFError) -> HEIFHeader {
        guard header.codedWidth > 0, header.codedHeight > 0, header.width > 0, header.height > 0 else {
            throw HEIFError(kind: .corrupt, message: "its primary image declares no size (ispe \(header.codedWidth)×\(header.codedHeight))")
        }
        if case .duplicated(let box) = derived {
            throw HEIFError(kind: .corrupt, message: "it has more than one \(box) box, which a HEIF file has at most once")
        }
        if case .unreadable(let type) = derived {
            throw HEIFError(kind: .corrupt, message: "its primary image is a \(type) whose data (its output size) cannot be found or is cut short")
        }
        // What the decode allocates: the canvas when it is larger than the ispe.
        var (width, height) = (header.codedWidth, header.codedHeight)
        var (verb, note) = ("declares", "")
        if case .derived(let canvasWidth, let canvasHeight) = derived,
           case let area = canvasWidth.multipliedReportingOverflow(by: canvasHeight), area.overflow || area.partialValue > width * height {
            (verb, note) = ("is a grid or overlay whose canvas is", " (its ispe says \(width)×\(height))")
            (width, height) = (canvasWidth, canvasHeight)
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= options.maxPixels else {
            throw HEIFError(
                kind: .tooManyPixels(width: width, height: height, limit: options.maxPixels),
                message: "its primary image \(verb) \(width)×\(height) pixels\(note), over the limit of \(options.maxPixels)")
        }
        guard pixels <= options.maxDecodedBytes / header.decodedBytesPerPixel else {
            let bytes = pixels * header.decodedBytesPerPixel
            throw HEIFError(
                kind: .tooManyBytes(width: width, height: height, bytes: bytes, limit: options.maxDecodedBytes),
                message: "its primary image \(verb) \(width)×\(height)\(note), whose decode holds \(bytes) bytes (\(header.decodedBytesPerPixel) a pixel), over the limit of \(options.maxDecodedBytes) bytes")
        }
        return header
    }

    /// `body` with the array's bytes in place, keeping the typed error.
    static func inPlace<T>(_ data: [UInt8], _ body: (UnsafeRawBufferPointer) throws(HEIFError) -> T) throws(HEIFError) -> T {
        let result = data.withUnsafeBytes { buffer -> Result<T, HEIFError> in
            do throws(HEIFError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
