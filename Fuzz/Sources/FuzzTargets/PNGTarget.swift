import Dispatch
import JPEG
import Media

extension FuzzTarget {
    /// Bytes as an uploaded PNG: the chunk walk with CRCs and the limits from IHDR
    /// (`PNG.header`), `PNG.validate` (libspng's inflate and filters, row by row), what PutImage
    /// makes of it (`MediaSniffer.classify`) and its thumbnails, all under a small pixel limit so
    /// each decode is short. A PNG that validates must make thumbnails, each a JPEG the product
    /// accepts at the size it says; `validate` and `classify` must agree.
    static let png = FuzzTarget(
        name: "png",
        summary: "the PNG chunk walk and libspng's decode behind PNG.header/validate, MediaSniffer and the Thumbnailer",
        maxLength: 64 * 1024
    ) { input, outcome in
        let options = DecodeOptions(maxPixels: JPEGChecks.maxPixels, maxDecodedBytes: JPEGChecks.maxPixels * 8)
        var validated: PNGHeader?
        do {
            let header = try PNG.header(of: input, options: options)
            outcome.answer("header: \(header.width)×\(header.height)")
            outcome.check(header.width * header.height <= options.maxPixels, "header past the pixel limit: \(header)")
            outcome.check(header.decodedBytes <= options.maxDecodedBytes, "header past the decoded-byte limit: \(header)")
        } catch {
            outcome.refused("PNG.header", error)
        }
        do {
            validated = try PNG.validate(input, options: options)
            outcome.answer("validate: \(validated!.width)×\(validated!.height)")
        } catch {
            outcome.refused("PNG.validate", error)
        }
        do {
            let media = try MediaSniffer.classify(
                input, maxPixels: options.maxPixels, maxDecodedBytes: options.maxDecodedBytes, decodeSlots: JPEGChecks.decodeSlots)
            outcome.answer("classify: \(media.contentType) \(media.width)×\(media.height)")
            if PNG.sniff(input) { outcome.check(validated != nil, "PutImage accepts a PNG that does not validate") }
        } catch {
            outcome.refused("MediaSniffer.classify", error)
            outcome.check(validated == nil, "PutImage refuses a PNG that validates: \(error)")
        }
        guard validated != nil else { return }
        let sizes = [Thumbnailer.Target(longestEdge: 32), Thumbnailer.Target(width: 24, height: 8, fit: .fill)]
        do {
            for output in try Thumbnailer(options: options).thumbnails(ofPNG: input, sizes: sizes) {
                JPEGChecks.written(output.data, width: output.width, height: output.height, by: "thumbnail \(output.target.width)×\(output.target.height)", &outcome)
            }
        } catch {
            outcome.check(false, "a PNG that validates makes no thumbnails: \(error)")
        }
    }
}
