/// The filter an axis is shrunk with (enlarging is always bilinear).
public enum ResampleFilter: Sendable {
    /// Area average: each output pixel the mean of the source pixels under its footprint. Soft:
    /// it passes less of the detail a thumbnail still has room for than the eye expects.
    case box
    /// Catmull-Rom (the cubic convolution of Keys with a = −0.5, two output pixels each side),
    /// stretched by the scale: Pillow's BICUBIC. Its small negative lobes keep edges crisp
    /// (samples that overshoot are clamped to 0...255); within 0.006 of Lanczos-3's SSIM on the
    /// thumbnails of `ops/bench sharpness`, at two thirds of its taps.
    case catmullRom
}

/// For one axis of a resize: which source samples, with which weights, make each output sample.
struct ResampleAxis {
    /// The first source index for each output index.
    private(set) var first: [Int] = []
    /// How many consecutive source samples each output index reads.
    private(set) var taps: [Int] = []
    /// The weights, `stride` per output index; each output's weights sum to 1.
    private(set) var weights: [Float] = []
    /// The number of weight slots per output index.
    let stride: Int

    /// `filter`'s weights when shrinking, bilinear when enlarging, identity when equal.
    init(source: Int, destination: Int, filter: ResampleFilter = .box) {
        precondition(source > 0 && destination > 0, "resample sizes must be positive")
        let scale = Double(source) / Double(destination)
        if destination < source, filter == .catmullRom {
            // Output centre (o + ½)·scale; the window is 2·scale source pixels each side, clamped
            // to the axis, its weights divided by their sum (a constant stays constant).
            let support = 2 * scale
            stride = Int((2 * support).rounded(.up)) + 2
            for output in 0..<destination {
                let centre = (Double(output) + 0.5) * scale
                let begin = max(0, Int((centre - support + 0.5).rounded(.down)))
                let end = min(source, Int((centre + support + 0.5).rounded(.down)))
                var raw = [Double](repeating: 0, count: stride)
                var sum = 0.0
                for index in begin..<end {
                    raw[index - begin] = Self.catmullRom((Double(index) + 0.5 - centre) / scale)
                    sum += raw[index - begin]
                }
                append(first: begin, taps: end - begin, row: raw.map { Float($0 / sum) })
            }
        } else if destination < source {
            stride = Int(scale.rounded(.up)) + 1
            for output in 0..<destination {
                // The output sample covers [left, right) of the source axis; each source sample weighs by overlap.
                let left = Double(output) * scale
                let right = min(Double(source), Double(output + 1) * scale)
                let begin = Int(left.rounded(.down))
                let end = min(source, Int(right.rounded(.up)))
                var row = [Float](repeating: 0, count: stride)
                for index in begin..<end {
                    row[index - begin] = Float((min(right, Double(index + 1)) - max(left, Double(index))) / scale)
                }
                append(first: begin, taps: end - begin, row: row)
            }
        } else {
            stride = 2
            for output in 0..<destination {
                // Pixel centres line up: output centre (o + ½) maps to source centre (s + ½).
                let centre = min(max((Double(output) + 0.5) * scale - 0.5, 0), Double(source - 1))
                let lower = Int(centre.rounded(.down))
                let fraction = Float(centre - Double(lower))
                if lower + 1 < source, fraction > 0 {
                    append(first: lower, taps: 2, row: [1 - fraction, fraction])
                } else {
                    append(first: lower, taps: 1, row: [1, 0])
                }
            }
        }
    }

    /// The Catmull-Rom kernel (Keys' cubic, a = −0.5): 1 at 0, 0 at ±1 and from ±2 on.
    static func catmullRom(_ x: Double) -> Double {
        let a = -0.5, x = abs(x)
        if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
        if x < 2 { return (((x - 5) * x + 8) * x - 4) * a }
        return 0
    }

    private mutating func append(first: Int, taps: Int, row: [Float]) {
        self.first.append(first)
        self.taps.append(taps)
        weights.append(contentsOf: row)
    }
}
