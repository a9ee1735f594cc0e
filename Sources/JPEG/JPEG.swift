import CTurboJPEG

/// Reads and writes JPEG files with TurboJPEG; every call uses its own handle, so it is safe from any thread.
public enum JPEG {
    /// True when the bytes start like a JPEG (FF D8 FF).
    public static func sniff(_ data: [UInt8]) -> Bool {
        data.withUnsafeBytes { sniff($0) }
    }

    /// `sniff` of bytes in place.
    public static func sniff(_ data: UnsafeRawBufferPointer) -> Bool {
        data.count >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF
    }

    /// Reads the header (tjDecompressHeader3) and EXIF orientation; refuses width × height > maxPixels.
    public static func header(of data: [UInt8], options: DecodeOptions = .init()) throws(JPEGError) -> JPEGHeader {
        try inPlace(data) { (buffer) throws(JPEGError) in try header(of: buffer, options: options) }
    }

    /// `header(of:)` of bytes in place (a memory map, a request frame).
    ///
    /// The segments before the first scan are walked one by one, so the frame header is found
    /// wherever it is, after any amount of metadata; TurboJPEG then reads only those segments.
    public static func header(of data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) throws(JPEGError) -> JPEGHeader {
        let handle = try TurboJPEGHandle(.decompress)
        var walker = try walker(of: data, options: options)
        return try header(of: data, walker: &walker, options: options, handle: handle)
    }

    /// Checks the whole structure of a JPEG without decoding it: the header (under the pixel
    /// limit), then every scan's entropy-coded data up to EOI (see `JPEGWalker` for what is
    /// checked). Linear in the size, at memory speed; bytes after EOI are ignored.
    ///
    /// What the structure cannot show is whether the Huffman codes themselves decode; for an
    /// arithmetic-coded frame it cannot bound the data either (`entropyDataChecked` is false):
    /// decode those to be sure.
    public static func validate(_ data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) throws(JPEGError) -> JPEGValidation {
        let handle = try TurboJPEGHandle(.decompress)
        var walker = try walker(of: data, options: options)
        let header = try header(of: data, walker: &walker, options: options, handle: handle)
        let end = try walker.readScans()
        return JPEGValidation(
            header: header, scans: walker.scans, end: end, entropyDataChecked: walker.frame?.arithmetic == false,
            extraneousBytes: walker.extraneousBytes, extraneousRuns: walker.extraneous.count,
            firstExtraneousOffset: walker.extraneous.first?.lowerBound)
    }

    /// `validate` of an array.
    public static func validate(_ data: [UInt8], options: DecodeOptions = .init()) throws(JPEGError) -> JPEGValidation {
        try inPlace(data) { (buffer) throws(JPEGError) in try validate(buffer, options: options) }
    }

    /// Decodes to 8-bit RGB in stored orientation (apply `header.orientation` with `RGBImage.oriented`).
    ///
    /// - Parameters:
    ///   - targetSize: when set, the smallest DCT scaling of 1/8, 1/4 and 1/2 whose output still covers this size in
    ///     both dimensions, measured in stored (unoriented) pixels; full size when the image is smaller.
    ///   - options: pixel limit (checked on the full declared size before decoding), scan limit, DCT speed.
    public static func decode(
        _ data: [UInt8],
        targetSize: (width: Int, height: Int)? = nil,
        options: DecodeOptions = .init()
    ) throws(JPEGError) -> RGBImage {
        try inPlace(data) { (buffer) throws(JPEGError) in try decode(buffer, targetSize: targetSize, options: options) }
    }

    /// `decode` of bytes in place (a memory map): nothing is copied before TurboJPEG reads them,
    /// except from a file with extraneous bytes between its marker segments, which TurboJPEG
    /// reads from a copy without them (up to EOI), as libjpeg reads the file when it skips them.
    public static func decode(
        _ data: UnsafeRawBufferPointer,
        targetSize: (width: Int, height: Int)? = nil,
        options: DecodeOptions = .init()
    ) throws(JPEGError) -> RGBImage {
        let handle = try TurboJPEGHandle(.decompress)
        var walker = try walker(of: data, options: options)
        let header = try header(of: data, walker: &walker, options: options, handle: handle)
        // The rest of the structure, only for the extraneous bytes between the segments after
        // the first scan (at memory speed, next to the decode): what else it would refuse,
        // TurboJPEG refuses in its own words, as it always has.
        let end = try? walker.readScans()
        return try decodePixels(
            data, walker: walker, header: header, end: end ?? data.count, size: scaledSize(of: header, toCover: targetSize),
            options: options, handle: handle)
    }

    /// Decodes a walked JPEG to 8-bit RGB at `size`, one of TurboJPEG's scaled sizes (see
    /// `scaledSize`): `size` × 3 bytes (× 4 for CMYK and YCCK, converted after) allocated here,
    /// plus what libjpeg holds while it decodes (a row group of MCUs; for a progressive frame
    /// every coefficient of the full-size image, 2 bytes each).
    static func decodePixels(
        _ data: UnsafeRawBufferPointer, walker: JPEGWalker, header: JPEGHeader, end: Int, size: (width: Int, height: Int),
        options: DecodeOptions, handle: TurboJPEGHandle
    ) throws(JPEGError) -> RGBImage {
        let (width, height) = size
        let isCMYK = header.colorSpace == .cmyk || header.colorSpace == .ycck
        // libjpeg cannot convert CMYK or YCCK to RGB itself, so those come out as CMYK and are converted below.
        let pixelFormat = isCMYK ? TJPF_CMYK : TJPF_RGB
        let bytesPerPixel = isCMYK ? 4 : 3
        // Every warning fails the decode anyway (see TurboJPEGHandle.check), so stop at the first one
        // instead of spending CPU on the rest of a damaged or hostile file.
        var flags: Int32 = TJFLAG_STOPONWARNING
        if options.limitScans { flags |= TJFLAG_LIMITSCANS }
        if options.fastDCT { flags |= TJFLAG_FASTDCT }
        var rc: Int32 = 0
        let samples = [UInt8](unsafeUninitializedCapacity: width * height * bytesPerPixel) { buffer, count in
            withoutExtraneous(data, walker.extraneous, end: end) { source in
                rc = tjDecompress2(
                    handle.raw, source.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt(source.count), buffer.baseAddress,
                    Int32(width), 0, Int32(height), Int32(pixelFormat.rawValue), flags
                )
            }
            // On failure TurboJPEG may have written only part of the buffer; zero it so nothing uninitialised escapes.
            if rc != 0 { buffer.initialize(repeating: 0) }
            count = buffer.count
        }
        try handle.check(rc)
        guard isCMYK else { return RGBImage(width: width, height: height, pixels: samples) }
        return RGBImage(width: width, height: height, cmyk: samples, adobeInverted: walker.adobe)
    }

    /// Encodes RGB pixels as a baseline JPEG at `quality` 1...100.
    public static func encode(_ image: RGBImage, quality: Int = 85, subsampling: Subsampling = .s420) throws(JPEGError) -> [UInt8] {
        try encode(image, quality: quality, subsampling: subsampling, segments: [])
    }

    /// `encode`, with `segments` (whole marker segments, e.g. `ICCProfile.segments`) right
    /// after the SOI and the JFIF APP0 TurboJPEG writes.
    /// `progressive`: TJFLAG_PROGRESSIVE (optimised Huffman tables; fewer bytes, slower to encode).
    static func encode(
        _ image: RGBImage, quality: Int, subsampling: Subsampling, segments: [UInt8], progressive: Bool = false
    ) throws(JPEGError) -> [UInt8] {
        image.assertConsistent()
        let samp = switch subsampling {
        case .s444: TJSAMP_444
        case .s422: TJSAMP_422
        case .s420: TJSAMP_420
        case .gray: TJSAMP_GRAY
        }
        return try compress(
            image.pixels, width: image.width, height: image.height, pixelFormat: TJPF_RGB, subsampling: samp, quality: quality,
            flags: progressive ? TJFLAG_PROGRESSIVE : 0, segments: segments)
    }

    /// Encodes Adobe-convention CMYK (4 bytes per pixel, 255 = no ink) as a YCCK JPEG with 4:4:4 sampling; for tests.
    static func encodeCMYK(_ cmyk: [UInt8], width: Int, height: Int, quality: Int = 90) throws(JPEGError) -> [UInt8] {
        precondition(cmyk.count == width * height * 4, "CMYK samples do not match \(width)×\(height)")
        return try compress(cmyk, width: width, height: height, pixelFormat: TJPF_CMYK, subsampling: TJSAMP_444, quality: quality)
    }

    /// Encodes RGB pixels as a progressive JPEG (TJFLAG_PROGRESSIVE: 10 scans at 4:2:0); for tests.
    static func encodeProgressive(_ image: RGBImage, quality: Int = 85) throws(JPEGError) -> [UInt8] {
        image.assertConsistent()
        return try compress(
            image.pixels, width: image.width, height: image.height, pixelFormat: TJPF_RGB, subsampling: TJSAMP_420,
            quality: quality, flags: TJFLAG_PROGRESSIVE)
    }

    // MARK: Internals

    /// `body` with the array's bytes in place, keeping the typed error (withUnsafeBytes only rethrows).
    static func inPlace<T>(
        _ data: [UInt8], _ body: (UnsafeRawBufferPointer) throws(JPEGError) -> T
    ) throws(JPEGError) -> T {
        let result = data.withUnsafeBytes { buffer -> Result<T, JPEGError> in
            do throws(JPEGError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// A walker over `data`, which must start like a JPEG.
    static func walker(of data: UnsafeRawBufferPointer, options: DecodeOptions) throws(JPEGError) -> JPEGWalker {
        guard sniff(data) else {
            throw JPEGError(kind: .notJPEG, message: "data does not start with the JPEG SOI marker FF D8 FF")
        }
        return JPEGWalker(data, options: options)
    }

    /// Walks the header segments, then has TurboJPEG read just those (up to the end of the
    /// first SOS segment), however far into the data they reach.
    static func header(
        of data: UnsafeRawBufferPointer, walker: inout JPEGWalker, options: DecodeOptions, handle: TurboJPEGHandle
    ) throws(JPEGError) -> JPEGHeader {
        let headerEnd = try walker.readHeader()
        // TurboJPEG 2.1 returns success and leaves these untouched when no frame header was found.
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = -1, colorSpace: Int32 = -1
        var rc: Int32 = 0
        withoutExtraneous(data, walker.extraneous, end: headerEnd) { source in
            rc = tjDecompressHeader3(
                handle.raw, source.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt(source.count),
                &width, &height, &subsampling, &colorSpace)
        }
        try handle.check(rc)
        guard width > 0, height > 0 else {
            throw JPEGError(kind: .truncated, message: "no frame header (SOF) before the end of the data")
        }
        let pixels = Int(width) * Int(height)
        guard pixels <= options.maxPixels else {
            throw JPEGError(
                kind: .tooManyPixels(width: Int(width), height: Int(height), limit: options.maxPixels),
                message: "\(width)×\(height) = \(pixels) pixels exceeds the limit of \(options.maxPixels)"
            )
        }
        return JPEGHeader(
            width: Int(width),
            height: Int(height),
            colorSpace: try Self.colorSpace(colorSpace),
            subsampling: Self.subsamplingName(subsampling),
            orientation: walker.exif.flatMap { EXIF.tiff(ofExifPayload: data, $0)?.orientation() } ?? 1
        )
    }

    private static func colorSpace(_ code: Int32) throws(JPEGError) -> ColorSpace {
        switch code {
        case Int32(TJCS_RGB.rawValue): return .rgb
        case Int32(TJCS_YCbCr.rawValue): return .yCbCr
        case Int32(TJCS_GRAY.rawValue): return .gray
        case Int32(TJCS_CMYK.rawValue): return .cmyk
        case Int32(TJCS_YCCK.rawValue): return .ycck
        default: throw JPEGError(kind: .unsupported("colour space \(code)"), message: "unknown JPEG colour space \(code)")
        }
    }

    private static func subsamplingName(_ code: Int32) -> String {
        switch code {
        case Int32(TJSAMP_444.rawValue): "4:4:4"
        case Int32(TJSAMP_422.rawValue): "4:2:2"
        case Int32(TJSAMP_420.rawValue): "4:2:0"
        case Int32(TJSAMP_GRAY.rawValue): "4:0:0"
        case Int32(TJSAMP_440.rawValue): "4:4:0"
        case Int32(TJSAMP_411.rawValue): "4:1:1"
        default: "unknown"
        }
    }

    /// The output size of the smallest downscaling factor of 1/2, 1/4 and 1/8 that still covers
    /// `target`; full size when none does, or without a target.
    static func scaledSize(of header: JPEGHeader, toCover target: (width: Int, height: Int)?) -> (width: Int, height: Int) {
        guard let target else { return (header.width, header.height) }
        precondition(target.width > 0 && target.height > 0, "targetSize must be positive (got \(target))")
        var count: Int32 = 0
        guard let factors = tjGetScalingFactors(&count) else { return (header.width, header.height) }
        var best = (width: header.width, height: header.height)
        // Only 1/2, 1/4 and 1/8: libjpeg-turbo's SIMD code covers those (its reduced IDCTs and
        // merged upsampling), while 7/8, 3/4, 5/8 and the rest run in plain C and cost more than
        // the whole image does. Measured on 171 wallpapers (mostly 2560×1600, FIT 1024, so 2048
        // to cover): 7/8 took 1.9 times as long as 1/1 (ops/bench thumbs, BENCHMARKS.md).
        // Pillow's draft mode and libvips' shrink-on-load make the same choice.
        for factor in UnsafeBufferPointer(start: factors, count: Int(count)) where factor.num == 1 && factor.denom > 1 {
            // TJSCALED(): a macro, so Swift cannot import it.
            let num = Int(factor.num), denom = Int(factor.denom)
            let width = (header.width * num + denom - 1) / denom
            let height = (header.height * num + denom - 1) / denom
            if width >= target.width, height >= target.height, width * height < best.width * best.height {
                best = (width, height)
            }
        }
        return best
    }

    private static func compress(
        _ samples: [UInt8], width: Int, height: Int, pixelFormat: TJPF, subsampling: TJSAMP, quality: Int, flags: Int32 = 0,
        segments: [UInt8] = []
    ) throws(JPEGError) -> [UInt8] {
        precondition(width > 0 && height > 0, "cannot encode an empty \(width)×\(height) image")
        precondition(width <= Int(Int32.max) && height <= Int(Int32.max), "\(width)×\(height) is too large for TurboJPEG")
        precondition((1...100).contains(quality), "JPEG quality must be in 1...100 (got \(quality))")
        let handle = try TurboJPEGHandle(.compress)
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        // TurboJPEG allocates the output (tjAlloc); it must be released with tjFree.
        defer { tjFree(output) }
        let rc = samples.withUnsafeBufferPointer { source in
            tjCompress2(
                handle.raw, source.baseAddress, Int32(width), 0, Int32(height), Int32(pixelFormat.rawValue),
                &output, &size, Int32(subsampling.rawValue), Int32(quality), flags
            )
        }
        try handle.check(rc)
        guard let output else { throw JPEGError(kind: .encodeFailed, message: "TurboJPEG returned no output") }
        return inserting(segments, afterJFIFOf: UnsafeBufferPointer(start: output, count: Int(size)))
    }

    /// A JPEG TurboJPEG wrote, with `segments` (whole marker segments) after its SOI, and after
    /// the JFIF APP0 when it wrote one (the first segment by the JFIF rules).
    static func inserting(_ segments: [UInt8], afterJFIFOf written: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        guard !segments.isEmpty else { return Array(written) }
        var at = 2
        if written.count > 6, written[2] == 0xFF, written[3] == 0xE0 { at = 4 + (Int(written[4]) << 8 | Int(written[5])) }
        var jpeg: [UInt8] = []
        jpeg.reserveCapacity(written.count + segments.count)
        jpeg += written[..<at]
        jpeg += segments
        jpeg += written[at...]
        return jpeg
    }
}
