import JPEG

extension FuzzTarget {
    /// A TIFF block (what follows "Exif\0\0") as the APP1 segment of a good JPEG: the
    /// orientation and date readers (`TIFFReader`: DateTimeOriginal, OffsetTimeOriginal and
    /// their ISO 8601 form), through `EXIF` and through the header.
    static let exifTIFF = FuzzTarget(
        name: "exif-tiff",
        summary: "the EXIF APP1 and TIFF readers (orientation, the Exif IFD's DateTimeOriginal and OffsetTimeOriginal)",
        maxLength: 4096
    ) { input, outcome in
        let app1 = TinyJPEG.segment(0xE1, Array("Exif\0\0".utf8) + input.prefix(65_533 - 6))
        let jpeg = TinyJPEG.inserting(app1, into: TinyJPEG.color)
        let orientation = EXIF.orientation(in: jpeg)
        outcome.answer("orientation: \(orientation.map(String.init) ?? "none")")
        outcome.check(orientation.map { (1...8).contains($0) } ?? true, "EXIF orientation \(orientation!) is not 1...8")
        jpeg.withUnsafeBytes { JPEGChecks.date(in: $0, &outcome) }
        do {
            let header = try JPEG.header(of: jpeg)
            outcome.check(header.orientation == orientation ?? 1, "the header's orientation \(header.orientation) is not EXIF's \(String(describing: orientation))")
        } catch {
            outcome.check(false, "a good JPEG with this APP1 does not read: \(error)")
        }
    }
}
