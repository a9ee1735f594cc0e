/// Reads PNG files (screenshots, scans) with libspng, under the limits of `DecodeOptions`: the
/// chunk structure is walked and the header's pixel and byte limits checked before anything is
/// inflated, so a file claiming a huge picture costs a few bytes read.
///
/// Outputs are JPEG (`Thumbnailer.thumbnails(ofPNG:sizes:)`): the pixels are decoded as RGBA and
/// composited on a background colour, since a JPEG has no alpha.
public enum PNG {
    /// The eight bytes every PNG starts with.
    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The most a deflate stream inflates to per byte (a 258-byte match in two bits): image
    /// data of n bytes cannot make more than 1032 × n bytes of scanlines.
    static let maxInflateRatio = 1032

    /// True when the bytes start with the PNG signature.
    public static func sniff(_ data: UnsafeRawBufferPointer) -> Bool {
        data.count >= signature.count && signature.indices.allSatisfy { data[$0] == signature[$0] }
    }

    /// `sniff` of an array.
    public static func sniff(_ data: [UInt8]) -> Bool { data.withUnsafeBytes { sniff($0) } }

    /// The header, after a walk of every chunk's length and type up to IEND (no CRC checked,
    /// nothing inflated): refuses a picture over the pixel limit or whose decoded pixels are
    /// over the byte limit, and image data too short to inflate to the size declared.
    public static func header(of data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) throws(PNGError) -> PNGHeader {
        try walk(data, options: options, checkCRC: false)
    }

    /// `header` of an array.
    public static func header(of data: [UInt8], options: DecodeOptions = .init()) throws(PNGError) -> PNGHeader {
        try inPlace(data) { (buffer) throws(PNGError) in try header(of: buffer, options: options) }
    }

    /// Checks a whole PNG without keeping its pixels: the chunk walk with every CRC, the limits
    /// (`header`), then a decode row by row into one row's buffer, which checks the zlib
    /// stream and the filters, and the chunks after the image data up to IEND. Its memory is
    /// a row; its time is the inflate's. Bytes after IEND are ignored, as decoders do.
    public static func validate(_ data: UnsafeRawBufferPointer, options: DecodeOptions = .init()) throws(PNGError) -> PNGHeader {
        let header = try walk(data, options: options, checkCRC: true)
        try SPNGDecoder(data, options: options).decodeDiscarding()
        return header
    }

    /// `validate` of an array.
    public static func validate(_ data: [UInt8], options: DecodeOptions = .init()) throws(PNGError) -> PNGHeader {
        try inPlace(data) { (buffer) throws(PNGError) in try validate(buffer, options: options) }
    }

    /// One decoded PNG: its pixels composited on the background, and its ICC profile.
    public struct Decoded: Sendable {
        /// The header it was decoded under.
        public let header: PNGHeader
        /// The pixels, RGB, alpha composited.
        public let image: RGBImage
        /// The iCCP chunk's profile, nil when it has none.
        public let profile: ICCProfile?
    }

    /// Decodes a whole PNG, its transparent pixels composited on `background` (straight alpha:
    /// `colour × α + background × (1 − α)`), after `header`'s checks. The RGB pixels (3 bytes a
    /// pixel) are all it holds: a PNG without transparency is decoded straight to RGB, and a
    /// non-interlaced one with transparency row by row as RGBA, each row composited into them.
    /// Only an interlaced PNG with transparency (its rows come in seven passes) is decoded
    /// whole as RGBA first, `PNGHeader.decodedBytes` (4 a pixel), the RGB made in the same buffer.
    public static func decode(
        _ data: UnsafeRawBufferPointer, background: RGBColor = .white, options: DecodeOptions = .init()
    ) throws(PNGError) -> Decoded {
        let header = try walk(data, options: options, checkCRC: false)
        let decoder = try SPNGDecoder(data, options: options)
        let (width, count) = (header.width, header.width * header.height)
        var pixels: [UInt8]
        if !header.hasTransparency {
            pixels = try decoder.decodeRGB(bytes: count * 3)
        } else if !header.interlaced {
            var failure: PNGError?
            pixels = [UInt8](unsafeUninitializedCapacity: count * 3) { buffer, initialized in
                do throws(PNGError) {
                    let target = buffer.baseAddress!
                    try decoder.decodeRowsRGBA(width: width, height: header.height) { row, index in
                        composite(row, into: target + index &* width &* 3, count: width, on: background)
                    }
                    initialized = count * 3
                } catch {
                    failure = error
                    initialized = 0
                }
            }
            if let failure { throw failure }
        } else {
            pixels = try decoder.decodeRGBA(bytes: header.decodedBytes)
            composite(&pixels, count: count, on: background)
        }
        let profile = try decoder.iccProfile().flatMap { $0.count <= ICCProfile.maxBytes ? ICCProfile(bytes: $0) : nil }
        return Decoded(header: header, image: RGBImage(width: header.width, height: header.height, pixels: pixels), profile: profile)
    }

    /// `decode` of an array.
    public static func decode(_ data: [UInt8], background: RGBColor = .white, options: DecodeOptions = .init()) throws(PNGError) -> Decoded {
        try inPlace(data) { (buffer) throws(PNGError) in try decode(buffer, background: background, options: options) }
    }

    /// Turns `count` RGBA pixels into RGB in place, each composited on `background`; the
    /// buffer ends `count` × 3 bytes long.
    static func composite(_ pixels: inout [UInt8], count: Int, on background: RGBColor) {
        precondition(pixels.count == count * 4, "\(count) RGBA pixels need \(count * 4) bytes, got \(pixels.count)")
        pixels.withUnsafeMutableBufferPointer { buffer in
            composite(buffer.baseAddress!, into: buffer.baseAddress!, count: count, on: background)
        }
        pixels.removeLast(count)
    }

    /// Writes `count` RGBA pixels from `source` as RGB at `target`, each composited on
    /// `background`. `target` may be `source`: pixel i is read whole (bytes 4i…4i+3) before bytes
    /// 3i…3i+2 are written, which are never past it.
    static func composite(_ source: UnsafePointer<UInt8>, into target: UnsafeMutablePointer<UInt8>, count: Int, on background: RGBColor) {
        let back = (UInt32(background.red), UInt32(background.green), UInt32(background.blue))
        for i in 0..<count {
            let from = source + 4 &* i, to = target + 3 &* i
            let r = UInt32(from[0]), g = UInt32(from[1]), b = UInt32(from[2]), a = UInt32(from[3])
            if a == 255 {
                to[0] = UInt8(r); to[1] = UInt8(g); to[2] = UInt8(b)
            } else {
                let rest = 255 &- a
                to[0] = UInt8((r &* a &+ back.0 &* rest &+ 127) / 255)
                to[1] = UInt8((g &* a &+ back.1 &* rest &+ 127) / 255)
                to[2] = UInt8((b &* a &+ back.2 &* rest &+ 127) / 255)
            }
        }
    }

    // MARK: The chunk walk

    /// Walks the chunks from the signature to IEND: lengths inside the file, types of four
    /// letters, IHDR first (its fields checked), at least one IDAT, at most
    /// `options.maxSegments` chunks, each CRC when `checkCRC`; then the limits.
    static func walk(_ data: UnsafeRawBufferPointer, options: DecodeOptions, checkCRC: Bool) throws(PNGError) -> PNGHeader {
        guard sniff(data) else {
            throw PNGError(kind: .notPNG, message: "data does not start with the PNG signature 89 50 4E 47 0D 0A 1A 0A")
        }
        var header: PNGHeader?
        var offset = signature.count, chunks = 0
        var sawIDAT = false
        while true {
            guard offset + 8 <= data.count else {
                let what = header == nil ? "before its IHDR chunk" : "before its IEND chunk"
                throw PNGError(kind: .truncated, message: "the file ends at byte \(data.count), \(what)")
            }
            let length = Int(data[offset]) << 24 | Int(data[offset + 1]) << 16 | Int(data[offset + 2]) << 8 | Int(data[offset + 3])
            let typeBytes = data[(offset + 4)..<(offset + 8)]
            let type = String(decoding: typeBytes, as: UTF8.self)
            guard typeBytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
                throw PNGError(kind: .corrupt, message: "the chunk at offset \(offset) has no valid type (bytes \(hex(typeBytes)))")
            }
            guard length <= Int(Int32.max) else {
                throw PNGError(kind: .corrupt, message: "chunk \(type) at offset \(offset) declares \(length) bytes, over PNG's 2³¹−1")
            }
            let dataStart = offset + 8, end = dataStart + length + 4
            guard end <= data.count else {
                throw PNGError(
                    kind: .truncated,
                    message: "chunk \(type) at offset \(offset) declares \(length) bytes of data, but the file ends \(data.count - dataStart) bytes after its header")
            }
            chunks += 1
            guard chunks <= options.maxSegments else {
                throw PNGError(kind: .overChunkLimits, message: "it has more than \(options.maxSegments) chunks (the \(chunks)th, \(type), at offset \(offset))")
            }
            if checkCRC {
                let stored = UInt32(data[end - 4]) << 24 | UInt32(data[end - 3]) << 16 | UInt32(data[end - 2]) << 8 | UInt32(data[end - 1])
                let computed = CRC32.checksum(UnsafeRawBufferPointer(rebasing: data[(offset + 4)..<(end - 4)]))
                guard stored == computed else {
                    throw PNGError(
                        kind: .badChecksum,
                        message: "chunk \(type) at offset \(offset) has CRC \(hex32(stored)), but its type and data make \(hex32(computed))")
                }
            }
            if header == nil {
                guard type == "IHDR" else { throw PNGError(kind: .corrupt, message: "its first chunk is \(type), not IHDR") }
                guard length == 13 else { throw PNGError(kind: .corrupt, message: "its IHDR chunk is \(length) bytes, not 13") }
                header = try PNGHeader(ihdr: data[dataStart..<(dataStart + 13)])
            } else {
                switch type {
                case "IHDR": throw PNGError(kind: .corrupt, message: "a second IHDR chunk at offset \(offset)")
                case "IDAT":
                    sawIDAT = true
                    header!.imageDataBytes += length
                case "tRNS": header!.hasTransparency = true
                case "iCCP": header!.hasICCProfile = true
                case "IEND":
                    guard sawIDAT else { throw PNGError(kind: .corrupt, message: "it has no IDAT chunk (no image data) before IEND") }
                    return try checkLimits(header!, options: options)
                default: break
                }
            }
            offset = end
        }
    }

    /// Refuses a header over the pixel or byte limit, or whose image data could not inflate
    /// to its scanlines.
    static func checkLimits(_ header: PNGHeader, options: DecodeOptions) throws(PNGError) -> PNGHeader {
        let (width, height) = (header.width, header.height)
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= options.maxPixels else {
            throw PNGError(
                kind: .tooManyPixels(width: width, height: height, limit: options.maxPixels),
                message: "its header declares \(width)×\(height) pixels, over the limit of \(options.maxPixels)")
        }
        guard pixels <= options.maxDecodedBytes / PNGHeader.decodedBytesPerPixel else {
            throw PNGError(
                kind: .tooManyBytes(width: width, height: height, bytes: header.decodedBytes, limit: options.maxDecodedBytes),
                message: "its header declares \(width)×\(height), which decodes to \(header.decodedBytes) bytes of pixels (4 a pixel), over the limit of \(options.maxDecodedBytes) bytes")
        }
        let scanlines = header.scanlineBytes
        let (most, overflowed) = header.imageDataBytes.multipliedReportingOverflow(by: maxInflateRatio)
        guard overflowed || most >= scanlines else {
            throw PNGError(
                kind: .truncated,
                message: "its \(header.imageDataBytes) bytes of image data inflate to at most \(most) bytes, short of the \(scanlines) bytes of scanlines its \(width)×\(height) header declares")
        }
        return header
    }

    private static func hex(_ bytes: some Collection<UInt8>) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
    }

    private static func hex32(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// `body` with the array's bytes in place, keeping the typed error.
    static func inPlace<T>(_ data: [UInt8], _ body: (UnsafeRawBufferPointer) throws(PNGError) -> T) throws(PNGError) -> T {
        let result = data.withUnsafeBytes { buffer -> Result<T, PNGError> in
            do throws(PNGError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

/// CRC-32 (ISO 3309, as PNG's chunks and zlib's gzip use it): polynomial 0xEDB88320, reflected.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        (0..<8).reduce(UInt32(n)) { c, _ in c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
    }

    /// The CRC of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
