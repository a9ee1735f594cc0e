import JPEG

/// Small JPEGs made by the product's encoder, for targets that fuzz one part of a JPEG
/// (its EXIF block, its ICC profile) inside an otherwise good file.
enum TinyJPEG {
    /// A 16×16 colour gradient, baseline 4:2:0.
    static let color = make(gray: false)
    /// A 16×16 grey gradient, one channel.
    static let gray = make(gray: true)

    private static func make(gray: Bool) -> [UInt8] {
        var pixels: [UInt8] = []
        for y in 0..<16 {
            for x in 0..<16 {
                pixels += gray ? [UInt8(x * 8 + y * 8), UInt8(x * 8 + y * 8), UInt8(x * 8 + y * 8)] : [UInt8(x * 16), UInt8(y * 16), 128]
            }
        }
        do {
            return try JPEG.encode(RGBImage(width: 16, height: 16, pixels: pixels), quality: 90, subsampling: gray ? .gray : .s420)
        } catch {
            preconditionFailure("TurboJPEG cannot encode a 16×16 gradient: \(error)")
        }
    }

    /// A marker segment: FF, `marker`, the length, then `payload` (cut to the 65,533 bytes a
    /// segment holds).
    static func segment(_ marker: UInt8, _ payload: some Collection<UInt8>) -> [UInt8] {
        let payload = Array(payload.prefix(65_533))
        let length = payload.count + 2
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// `jpeg` with `segments` right after its SOI.
    static func inserting(_ segments: [UInt8], into jpeg: [UInt8]) -> [UInt8] {
        Array(jpeg[..<2]) + segments + jpeg[2...]
    }

    /// The marker segments from SOI to the first SOS of a well-formed JPEG (one the product
    /// or a camera wrote: no fill bytes, no stray bytes).
    static func headerSegments(of jpeg: [UInt8]) -> [(marker: UInt8, payload: ArraySlice<UInt8>)] {
        var found: [(UInt8, ArraySlice<UInt8>)] = []
        var at = 2
        while at + 4 <= jpeg.count, jpeg[at] == 0xFF, jpeg[at + 1] != 0xDA {
            let end = at + 2 + (Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3]))
            found.append((jpeg[at + 1], jpeg[(at + 4)..<min(end, jpeg.count)]))
            at = end
        }
        return found
    }
}
