import CTurboJPEG

extension JPEG {
    /// Crops a walked JPEG on its DCT coefficients (tjTransform with TJXOPT_CROP), turned upright
    /// for its EXIF orientation in the same pass, copying none of its markers
    /// (TJXOPT_COPYNONE): the output is TurboJPEG's JFIF APP0, then `segments` (e.g.
    /// `ICCProfile.segments`), then the frame, sequential and Huffman-coded whatever the
    /// original's process. `crop` says where, in the coordinates of the turned image, and when
    /// that is exact.
    ///
    /// TurboJPEG reads every coefficient of the whole original into memory first (2 bytes each,
    /// 64 a block: 1.5 × width × height × 2 bytes for 4:2:0), so the pixel limit must have been
    /// checked from the header.
    static func transform(
        _ data: UnsafeRawBufferPointer, walker: JPEGWalker, end: Int, crop: LosslessCrop, segments: [UInt8], options: DecodeOptions
    ) throws(JPEGError) -> [UInt8] {
        let handle = try TurboJPEGHandle(.transform)
        var transform = tjtransform()
        transform.r = tjregion(
            x: Int32(crop.region.x), y: Int32(crop.region.y), w: Int32(crop.region.width), h: Int32(crop.region.height))
        transform.op = Int32(uprightOperation(forOrientation: crop.orientation).rawValue)
        transform.options = TJXOPT_CROP | TJXOPT_COPYNONE
        // As the decode: any warning fails it anyway (TurboJPEGHandle.check).
        var flags: Int32 = TJFLAG_STOPONWARNING
        if options.limitScans { flags |= TJFLAG_LIMITSCANS }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        // TurboJPEG allocates the output (tjAlloc); it must be released with tjFree.
        defer { tjFree(output) }
        var rc: Int32 = 0
        withoutExtraneous(data, walker.extraneous, end: end) { source in
            rc = tjTransform(
                handle.raw, source.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt(source.count), 1, &output, &size,
                &transform, flags)
        }
        try handle.check(rc)
        guard let output else { throw JPEGError(kind: .encodeFailed, message: "TurboJPEG returned no output") }
        return inserting(segments, afterJFIFOf: UnsafeBufferPointer(start: output, count: Int(size)))
    }

    /// The lossless operation that turns an image stored with EXIF `orientation` upright, as
    /// `RGBImage.oriented` does: 6 is a clockwise quarter turn (TJXOP_ROT90), 8 the other way.
    static func uprightOperation(forOrientation orientation: Int) -> TJXOP {
        switch orientation {
        case 2: TJXOP_HFLIP
        case 3: TJXOP_ROT180
        case 4: TJXOP_VFLIP
        case 5: TJXOP_TRANSPOSE
        case 6: TJXOP_ROT90
        case 7: TJXOP_TRANSVERSE
        case 8: TJXOP_ROT270
        default: TJXOP_NONE
        }
    }
}
