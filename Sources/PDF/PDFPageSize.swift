/// The size of a page in points (1/72 inch).
public struct PDFPageSize: Sendable, Hashable {
    /// Width in points.
    public var width: Double
    /// Height in points.
    public var height: Double

    /// A page `width` by `height` points; both must be positive (PDF allows 3 to 14,400).
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// ISO A4 portrait: 210 × 297 mm.
    public static let a4 = PDFPageSize(width: 210 / 25.4 * 72, height: 297 / 25.4 * 72)
    /// US Letter portrait: 8.5 × 11 in.
    public static let usLetter = PDFPageSize(width: 612, height: 792)

    /// The same page turned sideways (width and height swapped).
    public var landscape: PDFPageSize { PDFPageSize(width: max(width, height), height: min(width, height)) }

    /// The whole page as a rectangle.
    public var bounds: PDFRect { PDFRect(x: 0, y: 0, width: width, height: height) }
}
