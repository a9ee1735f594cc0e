/// Makes JPEG thumbnails of one JPEG at several sizes from a single decode: what the thumbnail
/// worker stores and GetRendition serves, so both are the same pixels.
///
/// The pipeline:
/// 1. The header is read (the pixel limit of `DecodeOptions`, from the frame header) and the
///    whole structure walked (every scan up to EOI: cut-off data, more scans than the
///    progressive-scan limit, a broken segment), all before any pixel buffer is allocated.
/// 2. One TurboJPEG decode, DCT-scaled to the smallest of 1/2, 1/4 and 1/8 (the scales
///    libjpeg-turbo decodes with SIMD: 7/8 costs more than the whole) that still leaves at
///    least twice the largest size (`RenditionPlan.decodeTarget`; the whole image when it is smaller),
///    TJFLAG_LIMITSCANS on by default; grey comes out as RGB, CMYK and YCCK are converted to
///    RGB (Adobe's inverted samples too, `RGBImage(width:height:cmyk:adobeInverted:)`).
/// 3. The EXIF orientation applied (all eight), so the pixels are upright.
/// 4. Each size shrunk with Catmull-Rom (`RGBImage.resized(…, filter: .catmullRom)`, Pillow's
///    BICUBIC; the area average it replaced was soft: BENCHMARKS.md, `ops/bench sharpness`): FIT
///    inside the box, FILL the box's centre, never enlarged. Largest first: a FIT size is resized
///    from the smallest larger FIT size already made that has at least twice its pixels in each
///    dimension (the 256 from the 1024, the 64 from the 256), else from the decode, so the small
///    sizes cost next to nothing.
/// 5. Each encoded progressive (optimised Huffman tables: the bytes the higher qualities below
///    cost) at `quality` (`quality` + 8 for a thumbnail of 128 pixels or less on its long edge,
///    where every block shows), 4:2:0 (one grey channel for a grey original), and again up the
///    ladder of `qualityLadder` while the encode keeps less than `structureKept` of the
///    structure it was given (`EncodeFidelity`: fine texture, grain, small print, which the JPEG
///    quantisation smears); with no metadata but the original's ICC profile: no EXIF (so no GPS
///    and no Orientation, which the upright pixels no longer need), no XMP, no comments.
///
/// Memory, for an 18-megapixel (5184×3456) photo and a 1024 FIT: the decode at 1/2 is
/// 2592×1728 RGB, 13.4 MB (the full-size RGB, 53.7 MB, is never allocated), and its upright
/// copy another 13.4 MB while it is made for orientations 2...8; each resize then holds one
/// row of its source in Float (12 bytes a pixel: 31 KB) and its output (2 MB for the 1024).
/// While it decodes, libjpeg holds a row of MCUs, or, for a progressive file, every DCT
/// coefficient of the full-size image (2 bytes each: 54 MB at 18 MP 4:2:0). The peak is about
/// 70 MB for a progressive 18 MP photo, about 30 MB for a baseline one, plus the original's
/// bytes, which are read in place.
public struct Thumbnailer: Sendable {
    /// One size asked for: a box and how the picture fits it.
    public struct Target: Sendable, Hashable {
        /// The box's width in upright pixels.
        public let width: Int
        /// The box's height in upright pixels.
        public let height: Int
        /// FIT (the whole picture inside the box) or FILL (the box's aspect, centre-cropped).
        public let fit: RenditionFit
        /// FILL only: scale a picture smaller than the box up to exactly the box (GetRendition's
        /// FILL, docs/protocol.md) instead of shrinking the box, aspect kept, to what the
        /// picture covers at its own size.
        public let enlargesToFill: Bool

        /// A square box: for FIT, the longest edge.
        public init(longestEdge: Int, fit: RenditionFit = .fit) {
            self.init(width: longestEdge, height: longestEdge, fit: fit)
        }

        /// A box of `width` × `height`; both must be positive.
        public init(width: Int, height: Int, fit: RenditionFit = .fit, enlargesToFill: Bool = false) {
            precondition(width > 0 && height > 0, "a thumbnail box must be positive (got \(width)×\(height))")
            self.width = width
            self.height = height
            self.fit = fit
            self.enlargesToFill = enlargesToFill
        }
    }

    /// One thumbnail made.
    public struct Output: Sendable {
        /// The size it was asked for.
        public let target: Target
        /// The JPEG.
        public let data: [UInt8]
        /// Its width in pixels (upright: orientation 1).
        public let width: Int
        /// Its height in pixels.
        public let height: Int
        /// The JPEG quality it was encoded at (`qualityLadder`).
        public let quality: Int
    }

    /// The JPEG quality thumbnails are encoded at unless asked otherwise.
    public static let defaultQuality = 80

    /// The JPEG quality, 1...100.
    public let quality: Int
    /// The limits the original is read under.
    public let options: DecodeOptions
    /// What a PNG's transparent pixels are composited on (`thumbnails(ofPNG:sizes:)`).
    public let background: RGBColor

    /// A thumbnailer encoding at `quality` (1...100), reading under `options`, and compositing
    /// a PNG's transparency on `background`.
    public init(quality: Int = Thumbnailer.defaultQuality, options: DecodeOptions = .init(), background: RGBColor = .white) {
        precondition((1...100).contains(quality), "JPEG quality must be in 1...100 (got \(quality))")
        self.quality = quality
        self.options = options
        self.background = background
    }

    /// The thumbnails of `jpeg` at `sizes`, in that order, from one decode.
    ///
    /// Throws a `JPEGError` that names what is wrong with the original (not a JPEG, too many
    /// pixels, cut off, too many scans, damaged); nothing large is allocated before the
    /// structure has been walked.
    public func thumbnails(of jpeg: UnsafeRawBufferPointer, sizes: [Target]) throws(JPEGError) -> [Output] {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let (handle, headerWalker, header) = try readHeader(jpeg)
        var walker = headerWalker
        let end = try walker.readScans()
        let (plans, decodeSize) = Self.plans(header, sizes)
        let pixels = try JPEG.decodePixels(
            jpeg, walker: walker, header: header, end: end, size: decodeSize, options: options, handle: handle
        ).oriented(plans[0].orientation)
        let gray = header.colorSpace == .gray
        // A profile for other samples than the output's (a CMYK original's, whose pixels were
        // converted without it) would have the thumbnail's colours misread: it goes.
        let profile = ICCProfile(chunks: walker.iccChunks, in: jpeg).flatMap { $0.colorSpace == (gray ? "GRAY" : "RGB ") ? $0 : nil }
        return try encode(pixels, plans: plans, sizes: sizes, gray: gray, segments: profile?.segments ?? [])
    }

    /// Each plan's size resized from upright `pixels` and encoded at `quality` with `segments`
    /// (the ICC profile's), in the order of `sizes`.
    func encode(
        _ pixels: RGBImage, plans: [RenditionPlan], sizes: [Target], gray: Bool, segments: [UInt8]
    ) throws(JPEGError) -> [Output] {
        // Largest first, so a smaller FIT size can be resized from a larger one already made.
        var outputs = [Output?](repeating: nil, count: plans.count)
        var madeFits: [RGBImage] = []
        for index in plans.indices.sorted(by: { plans[$0].size.width * plans[$0].size.height > plans[$1].size.width * plans[$1].size.height }) {
            let plan = plans[index]
            let image = plan.resize(plan.fit == .fit ? Self.source(for: plan.size, among: madeFits) ?? pixels : pixels)
            if plan.fit == .fit { madeFits.append(image) }
            let (data, rung) = try Self.encodeKeepingStructure(image, quality: quality, subsampling: gray ? .gray : .s420, segments: segments)
            outputs[index] = Output(target: sizes[index], data: data, width: plan.size.width, height: plan.size.height, quality: rung)
        }
        return outputs.map { $0! }
    }

    /// The least `EncodeFidelity.blockSSIM` an encode of a `width` × `height` thumbnail must keep
    /// for the quality ladder to stop: 0.97, or 0.965 from 512 pixels on the long edge.
    /// Calibrated on `ops/bench sharpness` (BENCHMARKS.md): the least that puts every thumbnail
    /// of its 199 photos at SSIM ≥ 0.95 against a Lanczos-3 resize of the full-size original
    /// (the lowest 0.955 at 1024, 0.959 at 256), within 10 % more bytes than before the ladder;
    /// 0.97 at 1024 costs 3 % more bytes for no thumbnail that needed them.
    static func structureKept(width: Int, height: Int) -> Double {
        max(width, height) >= 512 ? 0.965 : 0.97
    }

    /// The qualities a thumbnail of `width` × `height` is tried at, in turn, when asked for
    /// `quality`: from it (8 more on a thumbnail of 128 pixels or less on its long edge) up by 4,
    /// then 95; just `quality` when that is 95 or more. 80 climbs 84, 88, 92, 95.
    static func qualityLadder(_ quality: Int, width: Int, height: Int) -> [Int] {
        guard quality < 95 else { return [quality] }
        let first = min(95, max(width, height) <= 128 ? quality + 8 : quality)
        return Array(stride(from: first, to: 95, by: 3)) + [95]
    }

    /// `image` encoded progressive at the first quality of `qualityLadder` whose encode keeps
    /// `structureKept` of the luma it was given, or at the last one; and that quality.
    ///
    /// The rungs are tried as baseline JPEGs, each decoded back: a progressive JPEG of the
    /// same quality holds the same quantised coefficients (so decodes to the same pixels) in
    /// other scans, and costs five times as much to encode and four to decode. Only the quality
    /// chosen is encoded progressive.
    static func encodeKeepingStructure(
        _ image: RGBImage, quality: Int, subsampling: Subsampling, segments: [UInt8]
    ) throws(JPEGError) -> (data: [UInt8], quality: Int) {
        let ladder = qualityLadder(quality, width: image.width, height: image.height)
        var chosen = ladder[ladder.count - 1]
        if ladder.count > 1 {
            let luma = EncodeFidelity.luma(of: image)
            for rung in ladder.dropLast() {
                let trial = try JPEG.encode(image, quality: rung, subsampling: subsampling, segments: [])
                let decoded = try EncodeFidelity.decodedLuma(trial, width: image.width, height: image.height)
                if EncodeFidelity.blockSSIM(luma, decoded, width: image.width, height: image.height) >= structureKept(width: image.width, height: image.height) {
                    chosen = rung
                    break
                }
            }
        }
        return (try JPEG.encode(image, quality: chosen, subsampling: subsampling, segments: segments, progressive: true), chosen)
    }

    /// The header segments walked and read (the pixel limit checked), with the decoder that
    /// read them and the walker, which goes on to the scans.
    private func readHeader(_ jpeg: UnsafeRawBufferPointer) throws(JPEGError) -> (TurboJPEGHandle, JPEGWalker, JPEGHeader) {
        let handle = try TurboJPEGHandle(.decompress)
        var walker = try JPEG.walker(of: jpeg, options: options)
        let header = try JPEG.header(of: jpeg, walker: &walker, options: options, handle: handle)
        return (handle, walker, header)
    }

    /// What each size is made by, and the one decode size (DCT-scaled) that covers them all.
    private static func plans(_ header: JPEGHeader, _ sizes: [Target]) -> (plans: [RenditionPlan], decode: (width: Int, height: Int)) {
        let plans = Self.plans(width: header.width, height: header.height, orientation: header.orientation, sizes)
        // Every plan's decode target is in stored pixels, so the largest of each edge covers them all.
        let cover = plans.reduce((width: 1, height: 1)) { (max($0.width, $1.decodeTarget.width), max($0.height, $1.decodeTarget.height)) }
        return (plans, JPEG.scaledSize(of: header, toCover: cover))
    }

    /// What each size is made by, for a picture stored at `width` × `height` with `orientation`.
    static func plans(width: Int, height: Int, orientation: Int, _ sizes: [Target]) -> [RenditionPlan] {
        let upright = JPEG.uprightSize(width: width, height: height, orientation: orientation)
        return sizes.map { target in
            let box = target.fit == .fill && !target.enlargesToFill
                ? RenditionPlan.unenlargedBox((target.width, target.height), in: upright) : (target.width, target.height)
            return RenditionPlan(width: width, height: height, orientation: orientation, box: box, fit: target.fit)
        }
    }

    /// About the most memory `thumbnails(of:sizes:)` holds at once for `jpeg`, in bytes, from
    /// its headers alone (no pixel is decoded): the decoded pixels (4 bytes each for CMYK and
    /// YCCK, with their RGB conversion beside them), their upright copy when the orientation
    /// turns them, the largest size's encode (`encodingBytes`), and for a progressive frame every DCT coefficient of the
    /// full-size image (2 bytes each, whatever the scale), which libjpeg keeps until the last
    /// scan. A worker weighs its jobs by it (`ComputeSlots`) to bound its memory. Throws what
    /// `thumbnails` would throw for a bad header.
    public func workingBytes(of jpeg: UnsafeRawBufferPointer, sizes: [Target]) throws(JPEGError) -> Int {
        precondition(!sizes.isEmpty, "no thumbnail size asked for")
        let (_, walker, header) = try readHeader(jpeg)
        let (plans, decode) = Self.plans(header, sizes)
        let pixels = decode.width * decode.height
        let cmyk = header.colorSpace == .cmyk || header.colorSpace == .ycck
        var bytes = pixels * (cmyk ? 4 + 3 : 3)
        if plans[0].orientation != 1 { bytes += pixels * 3 }
        bytes += Self.encodingBytes(plans)
        if let frame = walker.frame, frame.progressive {
            // Per component, its blocks across and down, padded to whole MCUs, 64 coefficients
            // of 2 bytes each (jdcoefct.c's whole-image buffer).
            let mcusWide = (frame.width + 8 * frame.hMax - 1) / (8 * frame.hMax)
            let mcusHigh = (frame.height + 8 * frame.vMax - 1) / (8 * frame.vMax)
            bytes += frame.components.reduce(0) { $0 + mcusWide * $1.h * mcusHigh * $1.v * 128 }
        }
        return bytes
    }

    /// What encoding the largest of `plans` holds at once, 11 bytes a pixel: its RGB (3), the
    /// progressive encoder's coefficients (2 bytes for each of 1.5 samples at 4:2:0), and the
    /// quality ladder's RGB decoded back (3) and the two luma planes it compares (2).
    static func encodingBytes(_ plans: [RenditionPlan]) -> Int {
        11 * (plans.map { $0.size.width * $0.size.height }.max() ?? 0)
    }

    /// `workingBytes(of:sizes:)` of an array.
    public func workingBytes(of jpeg: [UInt8], sizes: [Target]) throws(JPEGError) -> Int {
        try JPEG.inPlace(jpeg) { (buffer) throws(JPEGError) in try workingBytes(of: buffer, sizes: sizes) }
    }

    /// The smallest of `images` (whole pictures, FIT sizes made already) with at least twice
    /// `size` in each dimension: averaging from it leaves the same two source pixels or more per
    /// output pixel as the decode does (`RenditionPlan.decodeTarget`), at a fraction of the
    /// reads. nil when none is that large.
    static func source(for size: (width: Int, height: Int), among images: [RGBImage]) -> RGBImage? {
        images.filter { $0.width >= 2 * size.width && $0.height >= 2 * size.height }.min { $0.width * $0.height < $1.width * $1.height }
    }

    /// `thumbnails(of:sizes:)` of an array.
    public func thumbnails(of jpeg: [UInt8], sizes: [Target]) throws(JPEGError) -> [Output] {
        try JPEG.inPlace(jpeg) { (buffer) throws(JPEGError) in try thumbnails(of: buffer, sizes: sizes) }
    }
}
