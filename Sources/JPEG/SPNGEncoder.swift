import CSPNG
import Foundation

/// A picture to write as PNG, in the file's own sample layout: what tests make their PNGs
/// from (`PNG.encode`), in any colour type, depth and interlacing a PNG can have.
struct PNGPicture {
    var width: Int
    var height: Int
    var bitDepth: Int
    var colorType: PNGHeader.ColorType
    var interlaced = false
    /// Rows as stored, no filter bytes: samples packed below 8 bits, big-endian at 16.
    var samples: [UInt8]
    /// PLTE entries for `.palette`.
    var palette: [(red: UInt8, green: UInt8, blue: UInt8)] = []
    /// tRNS for `.palette`: the alpha of the first entries.
    var paletteAlpha: [UInt8] = []
    /// tRNS for `.gray` (`red` is the grey) or `.rgb`: the one sample value that is transparent.
    var transparentKey: (red: UInt16, green: UInt16, blue: UInt16)?
    /// An iCCP chunk's profile.
    var iccProfile: [UInt8]?
}

extension PNG {
    /// Writes `picture` as PNG with libspng (zlib's default level, adaptive filters).
    static func encode(_ picture: PNGPicture) throws(PNGError) -> [UInt8] {
        guard let context = spng_ctx_new(Int32(truncatingIfNeeded: SPNG_CTX_ENCODER.rawValue)) else {
            throw PNGError(kind: .encodeFailed, message: "libspng could not make an encoder")
        }
        defer { spng_ctx_free(context) }
        func check(_ status: Int32, _ operation: String) throws(PNGError) {
            guard status != 0 else { return }
            throw PNGError(kind: .encodeFailed, message: "\(String(cString: spng_strerror(status))) (libspng error \(status), \(operation))")
        }
        try check(spng_set_option(context, SPNG_ENCODE_TO_BUFFER, 1), "encoding to a buffer")
        var ihdr = spng_ihdr(
            width: UInt32(picture.width), height: UInt32(picture.height), bit_depth: UInt8(picture.bitDepth),
            color_type: picture.colorType.rawValue, compression_method: 0, filter_method: 0, interlace_method: picture.interlaced ? 1 : 0)
        try check(spng_set_ihdr(context, &ihdr), "IHDR")
        if !picture.palette.isEmpty {
            var plte = spng_plte()
            plte.n_entries = UInt32(picture.palette.count)
            withUnsafeMutableBytes(of: &plte.entries) { entries in
                for (index, entry) in picture.palette.enumerated() {
                    entries[index * 4] = entry.red
                    entries[index * 4 + 1] = entry.green
                    entries[index * 4 + 2] = entry.blue
                }
            }
            try check(spng_set_plte(context, &plte), "PLTE")
        }
        if !picture.paletteAlpha.isEmpty || picture.transparentKey != nil {
            var trns = spng_trns()
            if let key = picture.transparentKey {
                (trns.gray, trns.red, trns.green, trns.blue) = (key.red, key.red, key.green, key.blue)
            }
            trns.n_type3_entries = UInt32(picture.paletteAlpha.count)
            withUnsafeMutableBytes(of: &trns.type3_alpha) { alpha in
                for (index, value) in picture.paletteAlpha.enumerated() { alpha[index] = value }
            }
            try check(spng_set_trns(context, &trns), "tRNS")
        }
        var profile = picture.iccProfile ?? []
        let status = profile.withUnsafeMutableBytes { bytes -> Int32 in
            if picture.iccProfile != nil {
                var iccp = spng_iccp()
                withUnsafeMutableBytes(of: &iccp.profile_name) { name in
                    for (index, byte) in "ICC profile".utf8.enumerated() { name[index] = byte }
                }
                iccp.profile_len = bytes.count
                iccp.profile = bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
                let set = spng_set_iccp(context, &iccp)
                guard set == 0 else { return set }
            }
            return picture.samples.withUnsafeBytes { samples in
                spng_encode_image(
                    context, samples.baseAddress, samples.count, Int32(truncatingIfNeeded: SPNG_FMT_RAW.rawValue),
                    Int32(truncatingIfNeeded: SPNG_ENCODE_FINALIZE.rawValue))
            }
        }
        try check(status, "encoding")
        var length = 0, error: Int32 = 0
        guard let buffer = spng_get_png_buffer(context, &length, &error) else {
            try check(error, "taking the buffer")
            throw PNGError(kind: .encodeFailed, message: "libspng returned no buffer")
        }
        defer { free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }
}
