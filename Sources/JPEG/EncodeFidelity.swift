import CTurboJPEG

/// How much of a thumbnail's structure its JPEG encode keeps, so a thumbnail of fine texture
/// (grass, gravel, fabric, film grain), which the default quality smears, can be encoded again
/// at a higher one: the `Thumbnailer`'s quality ladder.
///
/// The measure is SSIM (Wang et al. 2004, C1 = (0.01·255)², C2 = (0.03·255)²) between the luma
/// the encoder was given and the luma of its output decoded back, averaged over whole
/// non-overlapping 8×8 windows, each pixel alike (one window of the whole image when it is
/// smaller than 12 on an edge). Integer sums: a 1024×683 thumbnail costs about as much as its
/// grey decode.
enum EncodeFidelity {
    /// The JPEG encoder's luma of each pixel (libjpeg's rgb_ycc_convert: 16-bit fixed point, rounded).
    static func luma(of image: RGBImage) -> [UInt8] {
        let count = image.width * image.height
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            image.pixels.withUnsafeBufferPointer { rgb in
                for i in 0..<count {
                    let r = Int32(rgb[3 &* i]), g = Int32(rgb[3 &* i &+ 1]), b = Int32(rgb[3 &* i &+ 2])
                    buffer[i] = UInt8(truncatingIfNeeded: (19595 &* r &+ 38470 &* g &+ 7471 &* b &+ 32768) >> 16)
                }
            }
            initialized = count
        }
    }

    /// The luma of `jpeg` (`width` × `height`) as a viewer sees it: decoded to RGB (chroma
    /// upsampled, clamped to 0...255), then weighed as `luma(of:)` does. Not the coded Y: where a
    /// saturated colour changes within a pixel or two, 4:2:0 chroma pushes RGB past 0 or 255,
    /// and the clamp changes the brightness (a grey decode missed two such photos of the test
    /// corpus, left at SSIM 0.937).
    static func decodedLuma(_ jpeg: [UInt8], width: Int, height: Int) throws(JPEGError) -> [UInt8] {
        let handle = try TurboJPEGHandle(.decompress)
        var rc: Int32 = 0
        let samples = [UInt8](unsafeUninitializedCapacity: width * height * 3) { buffer, count in
            rc = jpeg.withUnsafeBufferPointer { source in
                tjDecompress2(
                    handle.raw, source.baseAddress, UInt(source.count), buffer.baseAddress, Int32(width), 0, Int32(height),
                    Int32(TJPF_RGB.rawValue), 0)
            }
            if rc != 0 { buffer.initialize(repeating: 0) }
            count = buffer.count
        }
        try handle.check(rc)
        return luma(of: RGBImage(width: width, height: height, pixels: samples))
    }

    /// The mean SSIM of two luma planes of `width` × `height` over whole 8×8 blocks.
    static func blockSSIM(_ a: [UInt8], _ b: [UInt8], width: Int, height: Int) -> Double {
        precondition(a.count == width * height && b.count == a.count, "luma planes must both be \(width)×\(height)")
        // The windows straddle the encoder's 8×8 blocks (they start 4 pixels in), so the seams
        // between blocks, where a coarse quantisation shows first, fall inside them.
        let whole = !(width >= 12 && height >= 12)
        let (blockWidth, blockHeight) = whole ? (width, height) : (8, 8)
        let offset = whole ? 0 : 4
        let across = (width - offset) / blockWidth, down = (height - offset) / blockHeight
        let n = Double(blockWidth * blockHeight)
        let c1 = 6.5025, c2 = 58.5225
        var total = 0.0
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                for by in 0..<down {
                    for bx in 0..<across {
                        var sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0
                        let top = offset &+ by &* blockHeight
                        for y in top..<(top &+ blockHeight) {
                            let row = y &* width &+ offset &+ bx &* blockWidth
                            for x in row..<(row &+ blockWidth) {
                                let p = Int(a[x]), q = Int(b[x])
                                sa &+= p; sb &+= q; saa &+= p &* p; sbb &+= q &* q; sab &+= p &* q
                            }
                        }
                        let ma = Double(sa) / n, mb = Double(sb) / n
                        let va = Double(saa) / n - ma * ma, vb = Double(sbb) / n - mb * mb, cab = Double(sab) / n - ma * mb
                        total += ((2 * ma * mb + c1) * (2 * cab + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2))
                    }
                }
            }
        }
        return total / Double(across * down)
    }
}
