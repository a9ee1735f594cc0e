/// Where a photo edit takes its pixels from and where they go, worked out from the sizes alone
/// (see `PhotoEdit` for the steps): the output's size, the whole upright pixels that show and
/// the output rectangle they are resized into; the rest of the output is the background.
///
/// The region is worked out in real numbers and snapped to whole pixels only at its edges that
/// lie inside the image (half a source pixel at most); an edge past the image is exact in the
/// source (0 or the image's edge) and placed in the output by the scale. So nothing larger than
/// the image or the output is ever made, whatever the zoom.
struct EditLayout: Equatable {
    /// The output's width.
    let width: Int
    /// The output's height.
    let height: Int
    /// The upright pixels that show: inside the image, at least one.
    let source: PhotoEdit.Rect
    /// Where `source` goes in the output, resized to its size: at least one pixel.
    let destination: PhotoEdit.Rect
    /// Everything outside the output's inscribed circle is background.
    let circle: Bool

    /// The layout of `edit` on an upright image of `imageWidth` × `imageHeight`, `crop` being
    /// the edit's crop inside it (`PhotoEdit.crop(inUprightWidth:height:)`); the edit has passed
    /// `PhotoEdit.check`.
    init(_ edit: PhotoEdit, crop: PhotoEdit.Rect, imageWidth: Int, imageHeight: Int) {
        // The frame: what the output shows before its size is set, the crop or its centred square.
        var frame = (width: crop.width, height: crop.height)
        if edit.shape != .rectangle { frame = (min(frame.width, frame.height), min(frame.width, frame.height)) }
        if let longest = edit.outputSize {
            let scale = Double(longest) / Double(max(frame.width, frame.height))
            width = max(1, Int((Double(frame.width) * scale).rounded()))
            height = max(1, Int((Double(frame.height) * scale).rounded()))
        } else {
            (width, height) = frame
        }
        let across = Self.axis(
            centre: Double(crop.x) + Double(crop.width) / 2, frame: frame.width, zoom: edit.zoom, image: imageWidth, output: width)
        let down = Self.axis(
            centre: Double(crop.y) + Double(crop.height) / 2, frame: frame.height, zoom: edit.zoom, image: imageHeight, output: height)
        source = PhotoEdit.Rect(
            x: across.source.lowerBound, y: down.source.lowerBound, width: across.source.count, height: down.source.count)
        destination = PhotoEdit.Rect(
            x: across.destination.lowerBound, y: down.destination.lowerBound, width: across.destination.count,
            height: down.destination.count)
        circle = edit.shape == .circle
    }

    /// Whether any of the output is background: the picture does not fill it, or a circle.
    var showsBackground: Bool {
        circle || destination != PhotoEdit.Rect(x: 0, y: 0, width: width, height: height)
    }

    /// One axis: the visible region is `frame` / `zoom` pixels long about `centre` in an image
    /// `image` pixels long, shown over `output` pixels. Returns the image pixels that show and
    /// the output pixels they fill.
    static func axis(centre: Double, frame: Int, zoom: Double, image: Int, output: Int) -> (source: Range<Int>, destination: Range<Int>) {
        // Infinite for a zoom near the smallest Double; then only `place` is used, which stays finite.
        let half = Double(frame) / zoom / 2
        // The output position of image position u, measured from the region's centre, so a
        // tiny zoom does not multiply infinities.
        func place(_ u: Double) -> Int {
            let at = Double(output) * (0.5 + (u - centre) * zoom / Double(frame))
            return Int(min(max(at, 0), Double(output)).rounded())
        }
        var start = 0, end = image, from = 0, to = output
        if centre - half >= 0 { start = Int((centre - half).rounded()) } else { from = place(0) }
        if centre + half <= Double(image) { end = Int((centre + half).rounded()) } else { to = place(Double(image)) }
        start = min(max(start, 0), image - 1)
        end = min(max(end, start + 1), image)
        if to <= from {
            // Less than an output pixel's worth of picture: it still shows, as one pixel.
            if from < output { to = from + 1 } else { from = output - 1 }
        }
        return (start..<end, from..<to)
    }

    /// The output: the source part of `upright` resized into the destination, on a
    /// `background` canvas when it does not fill it, then masked to the circle.
    func render(_ upright: RGBImage, background: PhotoEdit.Color) -> RGBImage {
        let part = upright.cropped(x: source.x, y: source.y, width: source.width, height: source.height)
            .resized(width: destination.width, height: destination.height)
        var image = part
        if part.width != width || part.height != height {
            image = RGBImage(filledWith: background, width: width, height: height)
            image.paste(part, x: destination.x, y: destination.y)
        }
        if circle { image.maskToInscribedCircle(background: background) }
        return image
    }
}
