/// A fill or stroke colour: a grey level or an RGB triple, each component from 0 to 1.
public enum PDFColor: Sendable, Hashable {
    /// A grey level: 0 is black, 1 is white.
    case gray(Double)
    /// Red, green and blue, each 0…1.
    case rgb(Double, Double, Double)

    /// Black.
    public static let black = PDFColor.gray(0)
    /// White.
    public static let white = PDFColor.gray(1)

    /// The operator that sets this as the fill colour ("0.5 g").
    var fillOperator: String { operatorText(gray: "g", rgb: "rg") }
    /// The operator that sets this as the stroke colour ("0.5 G").
    var strokeOperator: String { operatorText(gray: "G", rgb: "RG") }

    private func operatorText(gray grayOperator: String, rgb rgbOperator: String) -> String {
        func component(_ value: Double) -> String { PDFSyntax.number(min(1, max(0, value))) }
        switch self {
        case .gray(let level): return "\(component(level)) \(grayOperator)"
        case .rgb(let r, let g, let b): return "\(component(r)) \(component(g)) \(component(b)) \(rgbOperator)"
        }
    }
}
