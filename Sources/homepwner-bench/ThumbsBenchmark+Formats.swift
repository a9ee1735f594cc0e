import Foundation
import JPEG

/// The PNG and HEIC rows of `homepwner-bench thumbs`: the `Thumbnailer`'s `thumbnails(ofPNG:)`
/// and `thumbnails(ofHEIF:)` next to a bare C loop doing the same decode (whole: neither format
/// has a reduced-scale decode), resize and encode (ops/thumbs/thumbs_formats.c), one worker
/// each, on six 12-megapixel photos of the corpus made into PNGs and HEICs by ops/thumbs/prepare,
/// and those PNGs with an alpha channel (the Thumbnailer composites it on white; libspng's
/// RGB8 decode in the C loop drops it).
extension ThumbsBenchmark {
    /// One format's rows: the median of `roundCount` rounds that alternate the two contenders.
    static func formats(
        binary: String, pngFolder: String, heicFolder: String, alphaFolder: String, sizes: [Int], sizesText: String, quality: Int, roundCount: Int
    ) throws {
        print("\nPNG and HEIC originals (decoded whole), one worker, median of \(roundCount) alternated round(s):")
        print("""

            | format | photos | megapixels each | Thumbnailer images/s | C loop images/s | Thumbnailer / C loop |
            |---|---|---|---|---|---|
            """)
        for (format, folder, label) in [("png", pngFolder, "PNG"), ("png", alphaFolder, "PNG, RGBA"), ("heic", heicFolder, "HEIC")] {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".\(format)") }.sorted()
                .map { "\(folder)/\($0)" }
            let photos = try files.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }
            guard !photos.isEmpty else { throw Failure("no .\(format) files in \(folder)") }
            let megapixels = try photos.map { photo -> Double in
                let (width, height) = format == "png"
                    ? try PNG.header(of: photo).size : try HEIF.header(of: photo).size
                return Double(width * height) / 1e6
            }
            var swift: [Result] = [], c: [Result] = []
            for _ in 0..<roundCount {
                swift.append(try formatThumbnailer(photos, format: format, sizes: sizes, quality: quality))
                c.append(try external("C loop (\(format))", 1, binary, [format, "1", "1", "\(quality)", sizesText] + files))
            }
            let mine = swift.sorted { $0.perSecond < $1.perSecond }[roundCount / 2]
            let theirs = c.sorted { $0.perSecond < $1.perSecond }[roundCount / 2]
            print(String(
                format: "| %@ | %d | %.1f | %.2f | %.2f | %.2f× |", label, photos.count,
                megapixels.reduce(0, +) / Double(megapixels.count), mine.perSecond, theirs.perSecond, mine.perSecond / theirs.perSecond))
        }
    }

    /// The Thumbnailer on one thread over PNG or HEIC photos.
    static func formatThumbnailer(_ photos: [[UInt8]], format: String, sizes: [Int], quality: Int) throws -> Result {
        let thumbnailer = Thumbnailer(quality: quality), targets = sizes.map { Thumbnailer.Target(longestEdge: $0) }
        var bytes = 0
        let start = monotonicSeconds()
        for photo in photos {
            let outputs = format == "png"
                ? try thumbnailer.thumbnails(ofPNG: photo, sizes: targets) : try thumbnailer.thumbnails(ofHEIF: photo, sizes: targets)
            bytes += outputs.reduce(0) { $0 + $1.data.count }
        }
        return Result(name: "Thumbnailer (\(format))", workers: 1, images: photos.count, seconds: monotonicSeconds() - start, bytes: bytes)
    }
}

extension PNGHeader {
    /// Width and height.
    fileprivate var size: (Int, Int) { (width, height) }
}

extension HEIFHeader {
    /// Width and height as decoded.
    fileprivate var size: (Int, Int) { (width, height) }
}
