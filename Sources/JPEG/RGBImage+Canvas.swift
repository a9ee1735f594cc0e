extension RGBImage {
    /// An image of one colour.
    init(filledWith color: PhotoEdit.Color, width: Int, height: Int) {
        let count = width * height * 3
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var index = 0
            while index < count {
                buffer[index] = color.r
                buffer[index + 1] = color.g
                buffer[index + 2] = color.b
                index += 3
            }
            initialized = count
        }
        self.init(width: width, height: height, pixels: pixels)
    }

    /// Copies `image` over this one with its top-left corner at (x, y); it must fit.
    mutating func paste(_ image: RGBImage, x: Int, y: Int) {
        precondition(
            x >= 0 && y >= 0 && x + image.width <= width && y + image.height <= height,
            "\(image.width)×\(image.height) at (\(x), \(y)) does not fit in \(width)×\(height)")
        let rowLength = image.width * 3
        for row in 0..<image.height {
            let target = ((y + row) * width + x) * 3, from = row * rowLength
            pixels.replaceSubrange(target..<(target + rowLength), with: image.pixels[from..<(from + rowLength)])
        }
    }

    /// Everything outside the circle inscribed in the image (centre and diameter the image's,
    /// which should be square) becomes `background`, each pixel blended by how much of it the
    /// circle covers: 1 inside, 0 outside and, over the edge pixel's width, the distance of its
    /// centre inside the circle plus a half (a linear ramp, the usual one-pixel anti-aliasing).
    mutating func maskToInscribedCircle(background: PhotoEdit.Color) {
        let radius = Double(min(width, height)) / 2
        let centreX = Double(width) / 2, centreY = Double(height) / 2
        let inner = max(0, radius - 0.5), outer = radius + 0.5
        let colour = [Double(background.r), Double(background.g), Double(background.b)]
        let width = self.width, height = self.height
        pixels.withUnsafeMutableBufferPointer { pixels in
            for y in 0..<height {
                let dy = Double(y) + 0.5 - centreY
                for x in 0..<width {
                    let dx = Double(x) + 0.5 - centreX
                    let squared = dx * dx + dy * dy
                    if squared <= inner * inner { continue }
                    let coverage = squared >= outer * outer ? 0 : outer - squared.squareRoot()
                    let index = (y * width + x) * 3
                    for channel in 0..<3 {
                        let value = colour[channel] + (Double(pixels[index + channel]) - colour[channel]) * coverage
                        pixels[index + channel] = UInt8(min(max(value.rounded(), 0), 255))
                    }
                }
            }
        }
    }
}
