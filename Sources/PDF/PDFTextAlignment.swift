/// Where text sits relative to the point it is drawn at.
public enum PDFTextAlignment: Sendable, Hashable {
    /// The text starts at the point.
    case left
    /// The text is centred on the point.
    case center
    /// The text ends at the point.
    case right

    /// How far left of the point text `width` wide starts.
    func offset(forWidth width: Double) -> Double {
        switch self {
        case .left: 0
        case .center: width / 2
        case .right: width
        }
    }
}
