import CSPNG

/// One libspng decoder over bytes in place (`spng_ctx`), freed with it: the only place the
/// JPEG module calls libspng to read, with every return code checked in `check`.
///
/// It is made with the limits of `DecodeOptions`: the image limits (each edge at most
/// `maxPixels`, as `PNG.header` has already checked their product), the chunk limits (no
/// ancillary chunk inflated or kept past `maxChunkBytes`, all of them together past
/// `chunkCacheBytes`: a zTXt or iCCP bomb stops there), and every chunk's CRC checked,
/// ancillary ones included.
final class SPNGDecoder {
    /// The largest ancillary chunk (text, an ICC profile, EXIF) inflated or kept.
    static let maxChunkBytes = 4 << 20
    /// What all of them together may hold.
    static let chunkCacheBytes = 16 << 20

    private let context: OpaquePointer

    /// A decoder of `data`, which must stay valid while it lives.
    init(_ data: UnsafeRawBufferPointer, options: DecodeOptions) throws(PNGError) {
        guard let context = spng_ctx_new(0) else {
            throw PNGError(kind: .corrupt, message: "libspng could not make a decoder (out of memory)")
        }
        self.context = context
        try check(spng_set_png_buffer(context, data.baseAddress, data.count), "setting the input")
        let edge = UInt32(clamping: min(options.maxPixels, Int(Int32.max)))
        try check(spng_set_image_limits(context, edge, edge), "setting the image limits")
        try check(spng_set_chunk_limits(context, Self.maxChunkBytes, Self.chunkCacheBytes), "setting the chunk limits")
        try check(spng_set_crc_action(context, Self.value(SPNG_CRC_ERROR), Self.value(SPNG_CRC_ERROR)), "setting the CRC checks")
    }

    deinit { spng_ctx_free(context) }

    /// Decodes the whole image as RGBA, 8 bits a channel (16-bit samples reduced, palettes and
    /// tRNS expanded to alpha, no gamma applied) into a new buffer of `bytes` bytes.
    func decodeRGBA(bytes: Int) throws(PNGError) -> [UInt8] {
        try decodeWhole(format: Self.rgba8, bytes: bytes)
    }

    /// Decodes the whole image as RGB, 8 bits a channel (16-bit samples reduced, grey and
    /// palettes expanded, no gamma applied) into a new buffer of `bytes` bytes: for a PNG
    /// without transparency, whose pixels need no compositing.
    func decodeRGB(bytes: Int) throws(PNGError) -> [UInt8] {
        try decodeWhole(format: Self.rgb8, bytes: bytes)
    }

    /// Decodes a non-interlaced image row by row as RGBA (as `decodeRGBA`) into one reused row
    /// buffer, handing each row and its index (0, 1, … in order) to `body`: the whole picture
    /// passes through the memory of a row.
    func decodeRowsRGBA(width: Int, height: Int, _ body: (UnsafePointer<UInt8>, Int) -> Void) throws(PNGError) {
        try check(spng_decode_image(context, nil, 0, Self.rgba8, Self.value(SPNG_DECODE_TRNS) | Self.value(SPNG_DECODE_PROGRESSIVE)), "starting the decode")
        var row = [UInt8](repeating: 0, count: width * 4)
        var index = 0
        while true {
            let status = row.withUnsafeMutableBytes { spng_decode_row(context, $0.baseAddress, $0.count) }
            if status == Self.value(SPNG_EOI) || status == 0 {
                guard index < height else {
                    throw PNGError(kind: .corrupt, message: "libspng decoded more than the \(height) rows its header declares")
                }
                row.withUnsafeBufferPointer { body($0.baseAddress!, index) }
                index += 1
                if status == Self.value(SPNG_EOI) { break }
            } else {
                try check(status, "decoding row \(index)")
            }
        }
        guard index == height else {
            throw PNGError(kind: .truncated, message: "libspng decoded \(index) of the \(height) rows its header declares")
        }
    }

    /// Decodes the whole image in `format` into a new buffer of `bytes` bytes.
    private func decodeWhole(format: Int32, bytes: Int) throws(PNGError) -> [UInt8] {
        var failure: PNGError?
        let pixels = [UInt8](unsafeUninitializedCapacity: bytes) { buffer, initialized in
            do throws(PNGError) {
                var size = 0
                try check(spng_decoded_image_size(context, format, &size), "sizing the image")
                guard size == bytes else {
                    throw PNGError(kind: .corrupt, message: "libspng sizes the image at \(size) bytes, not the \(bytes) its header declares")
                }
                try check(spng_decode_image(context, buffer.baseAddress, bytes, format, Self.value(SPNG_DECODE_TRNS)), "decoding")
                initialized = bytes
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return pixels
    }

    /// Decodes every row into one reused row buffer, then reads the chunks after the image data
    /// up to IEND: the whole file checked (zlib stream, filters, CRCs) in the memory of a row.
    func decodeDiscarding() throws(PNGError) {
        try check(spng_decode_image(context, nil, 0, Self.rgba8, Self.value(SPNG_DECODE_TRNS) | Self.value(SPNG_DECODE_PROGRESSIVE)), "starting the decode")
        var ihdr = spng_ihdr()
        try check(spng_get_ihdr(context, &ihdr), "reading the IHDR")
        var row = [UInt8](repeating: 0, count: Int(ihdr.width) * PNGHeader.decodedBytesPerPixel)
        let count = row.count
        while true {
            let status = row.withUnsafeMutableBytes { spng_decode_row(context, $0.baseAddress, count) }
            if status == Self.value(SPNG_EOI) { break }
            try check(status, "decoding a row")
        }
        try check(spng_decode_chunks(context), "reading the chunks after the image data")
    }

    /// The ICC profile of an iCCP chunk (inflated), nil when there is none.
    func iccProfile() throws(PNGError) -> [UInt8]? {
        var iccp = spng_iccp()
        let status = spng_get_iccp(context, &iccp)
        if status == Self.value(SPNG_ECHUNKAVAIL) { return nil }
        try check(status, "reading the ICC profile")
        guard let profile = iccp.profile, iccp.profile_len > 0 else { return nil }
        return Array(UnsafeRawBufferPointer(start: profile, count: iccp.profile_len))
    }

    /// Throws for a libspng status other than 0, with libspng's words and what was being done.
    func check(_ status: Int32, _ operation: String) throws(PNGError) {
        guard status != 0 else { return }
        let words = spng_strerror(status).map { String(cString: $0) } ?? "error \(status)"
        throw PNGError(kind: Self.kind(of: status), message: "\(words) (libspng error \(status), \(operation))")
    }

    /// What a libspng status means for the sender.
    static func kind(of status: Int32) -> PNGError.Kind {
        switch status {
        case value(SPNG_IO_EOF), value(SPNG_EOF), value(SPNG_EIDAT_TOO_SHORT): .truncated
        case value(SPNG_ECHUNK_CRC): .badChecksum
        case value(SPNG_ECHUNK_LIMITS): .overChunkLimits
        default: .corrupt
        }
    }

    private static let rgba8 = value(SPNG_FMT_RGBA8)
    private static let rgb8 = value(SPNG_FMT_RGB8)

    /// A libspng enumerator as the `int` its functions take and return.
    private static func value<T: RawRepresentable>(_ constant: T) -> Int32 where T.RawValue: BinaryInteger {
        Int32(truncatingIfNeeded: constant.rawValue)
    }
}
