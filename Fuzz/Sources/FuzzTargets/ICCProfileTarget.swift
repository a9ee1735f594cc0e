import JPEG

extension FuzzTarget {
    /// ICC_PROFILE APP2 segments in a good JPEG (the input's first byte picks a colour or a grey
    /// one; each piece after it is a segment's chunk number, chunk count and part): the
    /// profile read (`ICCProfile`), kept or dropped by the thumbnailer and the photo editor,
    /// and written again in segments of their output, which must be a JPEG.
    static let iccProfile = FuzzTarget(
        name: "icc-profile",
        summary: "the ICC_PROFILE chunk reader and writer, through Thumbnailer and PhotoEditor",
        maxLength: 16 * 1024
    ) { input, outcome in
        guard let first = input.first else {
            outcome.answer("empty")
            return
        }
        let chunks = FuzzInput.pieces(UnsafeRawBufferPointer(rebasing: input[1...]), limit: 300)
        let segments = chunks.flatMap { TinyJPEG.segment(0xE2, Array("ICC_PROFILE\0".utf8) + $0) }
        let jpeg = TinyJPEG.inserting(segments, into: first & 1 == 0 ? TinyJPEG.color : TinyJPEG.gray)
        outcome.answer("\(chunks.count) APP2 segment(s)")
        let options = DecodeOptions(maxPixels: JPEGChecks.maxPixels)
        jpeg.withUnsafeBytes { buffer in
            JPEGChecks.thumbnails(of: buffer, options: options, &outcome)
            JPEGChecks.edits(of: buffer, upright: (16, 16), options: options, &outcome)
        }
        // A profile the product wrote reads back as itself: a thumbnail of the thumbnail
        // carries the same APP2 segments.
        let thumbnailer = Thumbnailer(options: options)
        let size = [Thumbnailer.Target(longestEdge: 16)]
        guard let first = try? jpeg.withUnsafeBytes({ try thumbnailer.thumbnails(of: $0, sizes: size) })[0] else { return }
        outcome.answer("the thumbnail carries \(iccSegments(of: first.data).count) ICC segment(s)")
        do {
            let again = try first.data.withUnsafeBytes { try thumbnailer.thumbnails(of: $0, sizes: size) }[0]
            outcome.check(
                iccSegments(of: again.data) == iccSegments(of: first.data),
                "a thumbnail's ICC profile (\(iccSegments(of: first.data).count) segments) is not the same in its own thumbnail")
        } catch {
            outcome.check(false, "a thumbnail the product wrote cannot be thumbnailed again: \(error)")
        }
    }

    /// The ICC_PROFILE APP2 segments of a JPEG the product wrote, as they are.
    private static func iccSegments(of jpeg: [UInt8]) -> [ArraySlice<UInt8>] {
        TinyJPEG.headerSegments(of: jpeg).filter { $0.marker == 0xE2 && $0.payload.starts(with: Array("ICC_PROFILE\0".utf8)) }.map(\.payload)
    }
}
