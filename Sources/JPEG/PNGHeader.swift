/// What a PNG's IHDR declares, with what its chunk walk found (`PNG.header(of:options:)`).
public struct PNGHeader: Sendable, Equatable {
    /// The colour types of PNG's IHDR.
    public enum ColorType: UInt8, Sendable {
        case gray = 0, rgb = 2, palette = 3, grayAlpha = 4, rgba = 6

        /// Samples per pixel as stored (a palette index is one).
        var channels: Int {
            switch self {
            case .gray, .palette: 1
            case .grayAlpha: 2
            case .rgb: 3
            case .rgba: 4
            }
        }

        /// The bit depths the PNG specification allows for the colour type.
        var bitDepths: Set<Int> {
            switch self {
            case .gray: [1, 2, 4, 8, 16]
            case .palette: [1, 2, 4, 8]
            case .rgb, .grayAlpha, .rgba: [8, 16]
            }
        }
    }

    /// Width in pixels, 1...2³¹−1.
    public let width: Int
    /// Height in pixels, 1...2³¹−1.
    public let height: Int
    /// Bits per sample: 1, 2, 4, 8 or 16.
    public let bitDepth: Int
    /// The colour type.
    public let colorType: ColorType
    /// Adam7-interlaced.
    public let interlaced: Bool
    /// Whether pixels can be transparent: an alpha channel, or a tRNS chunk.
    public internal(set) var hasTransparency = false
    /// Whether it has an iCCP chunk (an ICC profile).
    public internal(set) var hasICCProfile = false
    /// The compressed image data: the IDAT chunks' bytes in all.
    public internal(set) var imageDataBytes = 0

    /// Bytes per decoded pixel: the decode holds RGBA, 8 bits a channel, whatever the file's
    /// depth and colour type (16-bit samples are reduced, palettes and tRNS expanded).
    public static let decodedBytesPerPixel = 4

    /// The pixel buffer a decode may hold, the measure of `DecodeOptions.maxDecodedBytes`:
    /// width × height × 4.
    public var decodedBytes: Int { width * height * Self.decodedBytesPerPixel }

    /// What `PNG.decode` holds: the RGB pixels (3 bytes a pixel), or the RGBA ones (4) for an
    /// interlaced PNG with transparency, the one decoded whole before it is composited.
    public var heldBytes: Int { width * height * (interlaced && hasTransparency ? 4 : 3) }

    /// Whether the picture is grey (colour types 0 and 4).
    public var isGray: Bool { colorType == .gray || colorType == .grayAlpha }

    /// What the image data inflates to: every scanline of every pass, each with its filter byte.
    public var scanlineBytes: Int {
        let bitsPerPixel = colorType.channels * bitDepth
        func bytes(_ width: Int, _ height: Int) -> Int {
            width > 0 && height > 0 ? height * (1 + (width * bitsPerPixel + 7) / 8) : 0
        }
        guard interlaced else { return bytes(width, height) }
        // Adam7: each pass's first column and row, and its steps across and down.
        let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        return passes.reduce(0) { sum, pass in
            let (x, y, dx, dy) = pass
            return sum + bytes((width - x + dx - 1) / dx, (height - y + dy - 1) / dy)
        }
    }

    /// Reads the 13 bytes of an IHDR's data; throws `.corrupt`, naming the field, when one is
    /// outside what PNG allows.
    init(ihdr data: some Collection<UInt8>) throws(PNGError) {
        let bytes = Array(data)
        precondition(bytes.count == 13, "IHDR data is 13 bytes")
        func u32(_ at: Int) -> Int { Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) }
        let width = u32(0), height = u32(4), depth = Int(bytes[8])
        func bad(_ what: String) -> PNGError { PNGError(kind: .corrupt, message: "its IHDR is invalid: \(what)") }
        guard (1...Int(Int32.max)).contains(width) else { throw bad("width \(width) is outside 1...\(Int32.max)") }
        guard (1...Int(Int32.max)).contains(height) else { throw bad("height \(height) is outside 1...\(Int32.max)") }
        guard let type = ColorType(rawValue: bytes[9]) else { throw bad("colour type \(bytes[9]) is not 0, 2, 3, 4 or 6") }
        guard type.bitDepths.contains(depth) else {
            throw bad("bit depth \(depth) is not allowed for colour type \(type.rawValue) (allowed: \(type.bitDepths.sorted()))")
        }
        guard bytes[10] == 0 else { throw bad("compression method \(bytes[10]) is not 0") }
        guard bytes[11] == 0 else { throw bad("filter method \(bytes[11]) is not 0") }
        guard bytes[12] <= 1 else { throw bad("interlace method \(bytes[12]) is not 0 or 1") }
        self.width = width
        self.height = height
        self.bitDepth = depth
        self.colorType = type
        self.interlaced = bytes[12] == 1
        self.hasTransparency = type == .grayAlpha || type == .rgba
    }
}
