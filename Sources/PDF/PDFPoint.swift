/// A point on a page, in points (1/72 inch), measured from the page's top-left corner with y
/// growing downwards.
public struct PDFPoint: Sendable, Hashable {
    /// Distance from the left edge.
    public var x: Double
    /// Distance from the top edge.
    public var y: Double

    /// A point `x` from the left edge and `y` down from the top edge.
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}
