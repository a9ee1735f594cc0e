import Dispatch
import JPEG
import Media

extension FuzzTarget {
    /// Bytes as an uploaded HEIC: libheif's box parser behind `HEIF.header` (the limits from
    /// `ispe`), `HEIF.validate` (a decode), when it was taken, what PutImage makes of it
    /// (`MediaSniffer.classify`) and its thumbnails, all under a small pixel limit so each
    /// decode is short. A HEIC that validates must make thumbnails, each a JPEG the product
    /// accepts at the size it says; `validate` and `classify` must agree.
    static let heic = FuzzTarget(
        name: "heic",
        summary: "libheif's box parser and decode behind HEIF.header/validate, MediaSniffer and the Thumbnailer",
        maxLength: 64 * 1024
    ) { input, outcome in
        let options = DecodeOptions(maxPixels: JPEGChecks.maxPixels)
        var validated: HEIFHeader?
        do {
            let header = try HEIF.header(of: input, options: options)
            outcome.answer("header: \(header.codedWidth)×\(header.codedHeight), shown \(header.width)×\(header.height)")
            outcome.check(header.codedWidth * header.codedHeight <= options.maxPixels, "header past the pixel limit: \(header)")
        } catch {
            outcome.refused("HEIF.header", error)
        }
        do {
            validated = try HEIF.validate(input, options: options)
            outcome.answer("validate: \(validated!.width)×\(validated!.height)")
        } catch {
            outcome.refused("HEIF.validate", error)
        }
        if let takenAt = HEIF.takenAt(in: input, options: options) { outcome.answer("taken at \(takenAt)") }
        do {
            let media = try MediaSniffer.classify(input, maxPixels: options.maxPixels, decodeSlots: JPEGChecks.decodeSlots)
            outcome.answer("classify: \(media.contentType) \(media.width)×\(media.height)")
            if HEIF.sniff(input) { outcome.check(validated != nil, "PutImage accepts a HEIC that does not validate") }
        } catch {
            outcome.refused("MediaSniffer.classify", error)
            outcome.check(validated == nil, "PutImage refuses a HEIC that validates: \(error)")
        }
        guard validated != nil else { return }
        let sizes = [Thumbnailer.Target(longestEdge: 32), Thumbnailer.Target(width: 24, height: 8, fit: .fill)]
        do {
            for output in try Thumbnailer(options: options).thumbnails(ofHEIF: input, sizes: sizes) {
                JPEGChecks.written(output.data, width: output.width, height: output.height, by: "thumbnail \(output.target.width)×\(output.target.height)", &outcome)
            }
        } catch {
            outcome.check(false, "a HEIC that validates makes no thumbnails: \(error)")
        }
    }
}
