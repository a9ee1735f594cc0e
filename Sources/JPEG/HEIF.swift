/// Reads HEIC/HEIF photos (what iPhones and many Android phones save) with libheif and
/// libde265, under the limits of `DecodeOptions`: the boxes are parsed and what the decode
/// allocates checked against the pixel and decoded-byte limits before any pixel is decoded (the
/// primary image's coded size, `ispe`; a grid's or overlay's canvas, `HEIFCanvas`; the largest
/// picture an HEVC parameter set declares, `HEIFPictures`), so a file claiming a huge picture
/// costs its boxes read.
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
        try checkLimits(opened(data, options: options).header(), of: data, options: options)
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
        let header = try checkLimits(decoder.header(), of: data, options: options)
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
        let header = try checkLimits(decoder.header(), of: data, options: options)
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

    /// `checkLimits` of what `data`'s boxes and HEVC parameter sets say is decoded.
    static func checkLimits(_ header: HEIFHeader, of data: UnsafeRawBufferPointer, options: DecodeOptions) throws(HEIFError) -> HEIFHeader {
        let meta = HEIFMeta(data)
        return try checkLimits(header, canvas: HEIFCanvas.of(meta), pictures: HEIFPictures.of(meta), options: options)
    }

    /// Refuses a header over the pixel or byte limit, or with no size. What is checked is the
    /// largest of what the decode allocates: the primary image's `ispe`; the largest `canvas`
    /// of a derived image (a grid of tiles, an overlay); the largest picture an HEVC
    /// sequence parameter set in the file declares (`pictures`), which libde265 allocates
    /// whatever the `ispe` says. An `hvc1` item of more than one picture, or whose picture is
    /// larger than its own `ispe` (padded to whole coding blocks), is refused.
    static func checkLimits(
        _ header: HEIFHeader, canvas derived: HEIFCanvas.Canvas, pictures: HEIFPictures.Finding = .none, options: DecodeOptions
    ) throws(HEIFError) -> HEIFHeader {
        guard header.codedWidth > 0, header.codedHeight > 0, header.width > 0, header.height > 0 else {
            throw HEIFError(kind: .corrupt, message: "its primary image declares no size (ispe \(header.codedWidth)×\(header.codedHeight))")
        }
        if case .duplicated(let box) = derived {
            throw HEIFError(kind: .corrupt, message: "it has more than one \(box) box, which a HEIF file has at most once")
        }
        if case .unreadable(let type) = derived {
            throw HEIFError(kind: .corrupt, message: "it has a \(type) image whose data (its output size) cannot be found or is cut short")
        }
        if case .nested(let outer, let inner) = derived {
            throw HEIFError(
                kind: .corrupt,
                message: "it has a \(outer) image that takes another derived image (\(inner)) as input; only coded images are taken as inputs (libheif follows derived ones with no guard against a loop)")
        }
        if case .several(let item, let count) = pictures {
            throw HEIFError(kind: .corrupt, message: "its image item \(item) holds \(count) HEVC pictures, where an image item holds one")
        }
        if case .overlapping(let bytes, let fileBytes) = pictures {
            throw HEIFError(
                kind: .corrupt,
                message: "its image items' data overlap: \(bytes) bytes or more of coded data in a file of \(fileBytes) bytes (at most twice the file is read)")
        }
        if case .mismatched(let item, let ispeWidth, let ispeHeight, let codedWidth, let codedHeight) = pictures {
            throw HEIFError(
                kind: .corrupt,
                message: "its image item \(item) declares \(ispeWidth)×\(ispeHeight) (ispe) but its HEVC data codes a picture of \(codedWidth)×\(codedHeight)")
        }
        // What the decode allocates: the largest of the ispe, the canvas and the coded pictures.
        let ispe = (header.codedWidth, header.codedHeight)
        var (width, height) = ispe
        var (subject, note) = ("its primary image declares", "")
        func larger(_ candidate: (Int, Int)) -> Bool { HEIFCanvas.area(candidate) > HEIFCanvas.area((width, height)) }
        if case .derived(let canvasWidth, let canvasHeight) = derived, larger((canvasWidth, canvasHeight)) {
            (subject, note) = ("a grid or overlay in it declares a canvas of", " (its primary image's ispe says \(ispe.0)×\(ispe.1))")
            (width, height) = (canvasWidth, canvasHeight)
        }
        if case .largest(let codedWidth, let codedHeight) = pictures, larger((codedWidth, codedHeight)) {
            (subject, note) = ("its HEVC data declares a picture of", " (its primary image's ispe says \(ispe.0)×\(ispe.1))")
            (width, height) = (codedWidth, codedHeight)
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        let measured = note.isEmpty ? nil : "\(subject) \(width)×\(height)\(note)"
        guard !overflow, pixels <= options.maxPixels else {
            throw HEIFError(
                kind: .tooManyPixels(width: width, height: height, limit: options.maxPixels),
                message: "\(subject) \(width)×\(height) pixels\(note), over the limit of \(options.maxPixels)", measured: measured)
        }
        guard pixels <= options.maxDecodedBytes / header.decodedBytesPerPixel else {
            let bytes = pixels * header.decodedBytesPerPixel
            throw HEIFError(
                kind: .tooManyBytes(width: width, height: height, bytes: bytes, limit: options.maxDecodedBytes),
                message: "\(subject) \(width)×\(height)\(note), whose decode holds \(bytes) bytes (\(header.decodedBytesPerPixel) a pixel), over the limit of \(options.maxDecodedBytes) bytes",
                measured: measured)
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
