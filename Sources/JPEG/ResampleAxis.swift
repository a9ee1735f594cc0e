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

    /// Area-average (box) weights when shrinking, bilinear when enlarging, identity when equal.
    init(source: Int, destination: Int) {
        precondition(source > 0 && destination > 0, "resample sizes must be positive")
        let scale = Double(source) / Double(destination)
        if destination < source {
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

    private mutating func append(first: Int, taps: Int, row: [Float]) {
        self.first.append(first)
        self.taps.append(taps)
        weights.append(contentsOf: row)
    }
}
