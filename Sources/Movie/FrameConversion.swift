import CAV
import JPEG

/// A decoded frame as the Thumbnailer takes it (8-bit RGB, by libswscale with the frame's
/// own colour matrix and range), and whether it is (nearly) black.
enum FrameConversion {
    /// The side of the grey sample a frame is judged black on.
    static let sampleSide = 32
    /// A sample pixel at most this light (full-range luma, 0…255) is dark…
    static let darkLuma: UInt8 = 24
    /// …and a frame with at least this share of dark sample pixels is black.
    static let blackShare = 0.98

    /// Refuses a frame larger than the limit (a stream whose size changed mid-way; the
    /// decoder's `max_pixels` refuses it first).
    static func checkSize(_ frame: UnsafeMutablePointer<AVFrame>, limits: MovieLimits) throws(MovieError) {
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        guard width > 0, height > 0, width * height <= limits.maxPixels else {
            throw MovieError(
                .tooManyPixels(width: width, height: height, limit: limits.maxPixels),
                "a decoded frame of \(width)×\(height) is outside the limit of \(limits.maxPixels) pixels (--max-pixels)")
        }
    }

    /// The frame's pixels as RGB at its own size.
    static func rgb(_ frame: UnsafeMutablePointer<AVFrame>, limits: MovieLimits) throws(MovieError) -> RGBImage {
        try checkSize(frame, limits: limits)
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        try convert(frame, to: AV_PIX_FMT_RGB24, width: width, height: height, into: &pixels, rowBytes: width * 3)
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    /// Whether at least `blackShare` of a `sampleSide`² grey sample of the frame is at most
    /// `darkLuma`.
    static func isBlack(_ frame: UnsafeMutablePointer<AVFrame>) throws(MovieError) -> Bool {
        var sample = [UInt8](repeating: 0, count: sampleSide * sampleSide)
        try convert(frame, to: AV_PIX_FMT_GRAY8, width: sampleSide, height: sampleSide, into: &sample, rowBytes: sampleSide)
        let dark = sample.reduce(0) { $0 + ($1 <= darkLuma ? 1 : 0) }
        return Double(dark) >= blackShare * Double(sample.count)
    }

    /// Scales and converts `frame` into `output` (rows of `rowBytes`) by libswscale, reading
    /// its samples with the frame's colour matrix (BT.709 for HD when it names none, BT.601
    /// below) and range, writing full range.
    private static func convert(
        _ frame: UnsafeMutablePointer<AVFrame>, to format: AVPixelFormat, width: Int, height: Int, into output: inout [UInt8], rowBytes: Int
    ) throws(MovieError) {
        let source = AVPixelFormat(rawValue: frame.pointee.format)
        guard let scaler = hp_sws_getContext(
            frame.pointee.width, frame.pointee.height, source, Int32(width), Int32(height), format,
            Int32(SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT), nil, nil, nil)
        else {
            let name = hp_av_get_pix_fmt_name(source).map { String(cString: $0) } ?? "\(frame.pointee.format)"
            throw MovieError(.noFrame, "its frames' pixel format \(name) does not convert to RGB")
        }
        defer { hp_sws_freeContext(scaler) }
        var space = Int32(frame.pointee.colorspace.rawValue)
        if frame.pointee.colorspace == AVCOL_SPC_UNSPECIFIED || frame.pointee.colorspace == AVCOL_SPC_RGB {
            space = frame.pointee.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601
        }
        let fullRange: Int32 = frame.pointee.color_range == AVCOL_RANGE_JPEG ? 1 : 0
        _ = hp_sws_setColorspaceDetails(scaler, hp_sws_getCoefficients(space), fullRange, hp_sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16)
        let scaled = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var planes: [UnsafeMutablePointer<UInt8>?] = [buffer.baseAddress, nil, nil, nil]
            var strides: [Int32] = [Int32(rowBytes), 0, 0, 0]
            return withUnsafePointer(to: &frame.pointee.data) { data in
                withUnsafePointer(to: &frame.pointee.linesize) { lines in
                    data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sourcePlanes in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                            hp_sws_scale(scaler, sourcePlanes, sourceStrides, 0, frame.pointee.height, &planes, &strides)
                        }
                    }
                }
            }
        }
        guard scaled == Int32(height) else { throw MovieError(.noFrame, "its frame did not convert to RGB (\(scaled) of \(height) rows)") }
    }
}
