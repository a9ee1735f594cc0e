/// A rectangle on a page, in points, from its top-left corner (`x`, `y`, y growing downwards).
public struct PDFRect: Sendable, Hashable {
    /// Left edge.
    public var x: Double
    /// Top edge.
    public var y: Double
    /// Width; not negative for drawing.
    public var width: Double
    /// Height; not negative for drawing.
    public var height: Double

    /// A rectangle whose top-left corner is (`x`, `y`).
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The right edge.
    public var maxX: Double { x + width }
    /// The bottom edge.
    public var maxY: Double { y + height }

    /// The rectangle moved `amount` in from every side (out when negative).
    public func insetBy(_ amount: Double) -> PDFRect {
        PDFRect(x: x + amount, y: y + amount, width: width - 2 * amount, height: height - 2 * amount)
    }

    /// The largest rectangle of aspect ratio `width`:`height` that fits inside this one, centred
    /// in it (aspect fit). A zero or negative size gives a zero-sized rectangle at the centre.
    public func aspectFit(width contentWidth: Double, height contentHeight: Double) -> PDFRect {
        guard contentWidth > 0, contentHeight > 0, width > 0, height > 0 else {
            return PDFRect(x: x + width / 2, y: y + height / 2, width: 0, height: 0)
        }
        let scale = min(width / contentWidth, height / contentHeight)
        let fitted = (width: contentWidth * scale, height: contentHeight * scale)
        return PDFRect(x: x + (width - fitted.width) / 2, y: y + (height - fitted.height) / 2, width: fitted.width, height: fitted.height)
    }
}
