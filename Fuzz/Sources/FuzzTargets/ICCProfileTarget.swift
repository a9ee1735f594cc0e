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
        jpeg.withUnsafeBytes { buffer in
            let options = DecodeOptions(maxPixels: JPEGChecks.maxPixels)
            JPEGChecks.thumbnails(of: buffer, options: options, &outcome)
            JPEGChecks.edits(of: buffer, upright: (16, 16), options: options, &outcome)
        }
    }
}
