import Dispatch
import JPEG
import Media

extension FuzzTarget {
    /// Bytes as an uploaded photo: the structure walked (`JPEG.validate`: every segment, every
    /// scan), the header, EXIF orientation and date, what PutImage makes of it
    /// (`MediaSniffer.classify`), thumbnails (decode, ICC profile, orientation, resize, encode)
    /// and a capture's photo edit (lossless crop, re-encode), all under a small pixel limit so
    /// each decode is short. What the product writes must be a JPEG it accepts.
    static let jpeg = FuzzTarget(
        name: "jpeg",
        summary: "the JPEG segment walker, header and EXIF readers, MediaSniffer, Thumbnailer and PhotoEditor",
        maxLength: 64 * 1024
    ) { input, outcome in
        let options = DecodeOptions(maxPixels: JPEGChecks.maxPixels)
        var validated: JPEGValidation?
        do {
            let validation = try JPEG.validate(input, options: options)
            validated = validation
            outcome.answer("validate: \(validation.header.width)×\(validation.header.height), \(validation.scans) scan(s), ends at \(validation.end)")
            outcome.check(validation.end <= input.count && validation.scans >= 1, "validate: end \(validation.end) or \(validation.scans) scans")
        } catch {
            outcome.refused("JPEG.validate", error)
        }
        do {
            let header = try JPEG.header(of: input, options: options)
            outcome.check(validated == nil || validated?.header == header, "JPEG.header reads \(header), validate \(String(describing: validated?.header))")
        } catch {
            outcome.refused("JPEG.header", error)
            outcome.check(validated == nil, "JPEG.header refuses what JPEG.validate accepts: \(error)")
        }
        let orientation = EXIF.orientation(in: input)
        outcome.check(orientation.map { (1...8).contains($0) } ?? true, "EXIF orientation \(String(describing: orientation))")
        if let validated {
            outcome.check(validated.header.orientation == orientation ?? 1, "the header's orientation \(validated.header.orientation) is not EXIF's \(String(describing: orientation))")
        }
        JPEGChecks.date(in: input, &outcome)
        do {
            let media = try MediaSniffer.classify(input, maxPixels: options.maxPixels, decodeSlots: JPEGChecks.decodeSlots)
            outcome.answer("classify: \(media.contentType) \(media.width)×\(media.height)")
        } catch {
            outcome.refused("MediaSniffer.classify", error)
            outcome.check(validated?.entropyDataChecked != true, "PutImage would refuse a JPEG that validates: \(error)")
        }
        guard validated != nil else { return }
        JPEGChecks.thumbnails(of: input, options: options, &outcome)
        JPEGChecks.edits(of: input, upright: validated!.header.orientedSize, options: options, &outcome)
    }
}

/// What the JPEG targets ask of the product beyond the structure.
enum JPEGChecks {
    /// Small enough that a decode takes well under a millisecond.
    static let maxPixels = 1 << 16

    /// MediaSniffer's decodes, one at a time.
    static let decodeSlots = DispatchSemaphore(value: 1)

    /// The DateTimeOriginal read, which must be 19 characters "YYYY:MM:DD HH:MM:SS" when found,
    /// OffsetTimeOriginal ("+HH:MM" or "-HH:MM"), and `takenAt` (what PutImage records): the
    /// date in ISO 8601, with the offset after it when there is one, and nothing without a date.
    static func date(in jpeg: UnsafeRawBufferPointer, _ outcome: inout FuzzOutcome) {
        let bytes = [UInt8](jpeg)
        let date = EXIF.dateTimeOriginal(in: bytes), offset = EXIF.offsetTimeOriginal(in: bytes)
        let takenAt = EXIF.takenAt(in: jpeg)
        if let offset {
            outcome.answer("EXIF offset: \(offset)")
            let sign = offset.utf8.first
            outcome.check(
                offset.utf8.count == 6 && (sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-")),
                "EXIF offset \"\(offset)\" is not of the form +HH:MM")
        }
        guard let date else {
            outcome.check(takenAt == nil, "taken at \(takenAt ?? "") without a DateTimeOriginal")
            return
        }
        outcome.answer("EXIF date: \(date)")
        outcome.check(date.utf8.count == 19, "EXIF date \"\(date)\" is not 19 characters")
        var iso = Array(date.utf8)
        iso[4] = UInt8(ascii: "-")
        iso[7] = UInt8(ascii: "-")
        iso[10] = UInt8(ascii: "T")
        let expected = String(decoding: iso, as: UTF8.self) + (offset ?? "")
        outcome.check(takenAt == expected, "taken at \(takenAt ?? "nil"), not \(expected) (the date and the offset in ISO 8601)")
    }

    /// Two thumbnails (FIT and FILL), each a JPEG of the size it says.
    static func thumbnails(of jpeg: UnsafeRawBufferPointer, options: DecodeOptions, _ outcome: inout FuzzOutcome) {
        let sizes = [Thumbnailer.Target(longestEdge: 32), Thumbnailer.Target(width: 24, height: 8, fit: .fill)]
        do {
            for output in try Thumbnailer(options: options).thumbnails(of: jpeg, sizes: sizes) {
                written(output.data, width: output.width, height: output.height, by: "thumbnail \(output.target.width)×\(output.target.height)", &outcome)
            }
        } catch {
            outcome.refused("Thumbnailer", error)
        }
    }

    /// A capture's edits: the whole picture (a lossless copy where the crop allows) and a
    /// crop drawn as a circle at a set size (a re-encode).
    static func edits(of jpeg: UnsafeRawBufferPointer, upright: (width: Int, height: Int), options: DecodeOptions, _ outcome: inout FuzzOutcome) {
        let crop = PhotoEdit.Rect(x: upright.width / 4, y: upright.height / 4, width: max(1, upright.width / 2), height: max(1, upright.height / 2))
        let edits = [
            ("whole", PhotoEdit()), ("crop \(crop)", PhotoEdit(crop: crop)),
            ("circle of \(crop)", PhotoEdit(crop: crop, zoom: 1.5, shape: .circle, outputSize: 24)),
        ]
        for (name, edit) in edits {
            do {
                let photo = try PhotoEditor(options: options).edit(jpeg, edit)
                written(photo.data, width: photo.width, height: photo.height, by: "edit \(name) (lossless: \(photo.lossless))", &outcome)
            } catch {
                outcome.refused("PhotoEditor", error)
            }
        }
    }

    /// A JPEG the product wrote: it must validate, at the size the writer says.
    static func written(_ data: [UInt8], width: Int, height: Int, by writer: String, _ outcome: inout FuzzOutcome) {
        do {
            let header = try JPEG.validate(data).header
            outcome.answer("\(writer): \(header.width)×\(header.height)")
            outcome.check(header.width == width && header.height == height, "\(writer) says \(width)×\(height) but wrote \(header.width)×\(header.height)")
        } catch {
            outcome.check(false, "\(writer) wrote a JPEG that does not validate: \(error)")
        }
    }
}
