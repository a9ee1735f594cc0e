extension RGBImage {
    /// The part of the image inside the rectangle, clamped to the image; empty (0×0) when they do not overlap.
    public func cropped(x: Int, y: Int, width: Int, height: Int) -> RGBImage {
        precondition(width >= 0 && height >= 0, "crop size must not be negative (got \(width)×\(height))")
        assertConsistent()
        let left = min(max(x, 0), self.width), top = min(max(y, 0), self.height)
        let right = max(left, min(self.width, x.addingReportingOverflow(width).partialValue))
        let bottom = max(top, min(self.height, y.addingReportingOverflow(height).partialValue))
        guard right > left, bottom > top else { return RGBImage(width: 0, height: 0, pixels: []) }
        if left == 0, top == 0, right == self.width, bottom == self.height { return self }
        var output: [UInt8] = []
        output.reserveCapacity((right - left) * (bottom - top) * 3)
        for row in top..<bottom {
            let start = (row * self.width + left) * 3
            output.append(contentsOf: pixels[start..<(start + (right - left) * 3)])
        }
        return RGBImage(width: right - left, height: bottom - top, pixels: output)
    }

    /// Scales to exactly width × height: `filter` (the area average by default) on a shrinking
    /// axis, bilinear on an enlarging one.
    public func resized(width: Int, height: Int, filter: ResampleFilter = .box) -> RGBImage {
        precondition(width > 0 && height > 0, "resize target must be positive (got \(width)×\(height))")
        precondition(self.width > 0 && self.height > 0, "cannot resize an empty image")
        assertConsistent()
        if width == self.width, height == self.height { return self }
        let horizontal = ResampleAxis(source: self.width, destination: width, filter: filter)
        let vertical = ResampleAxis(source: self.height, destination: height, filter: filter)
        // Row by row: the source rows under an output row are weighted into one row of Float at
        // the source's width, which is then averaged across to the new width and rounded once.
        // The only buffer is that row. The vertical pass is a loop over contiguous samples on raw
        // pointers with wrapping arithmetic, so the compiler vectorizes it (an index checked for
        // overflow keeps it scalar, at four times the cost); the horizontal one reads each tap's
        // three channels as one SIMD4 (the row has one Float more, so the last pixel's fourth
        // lane reads it) and weighs them in one multiply-add.
        let sourceRowLength = self.width * 3, rowLength = width * 3
        let output = [UInt8](unsafeUninitializedCapacity: rowLength * height) { buffer, initialized in
            var row = [Float](repeating: 0, count: sourceRowLength + 1)
            pixels.withUnsafeBufferPointer { source in
                row.withUnsafeMutableBufferPointer { sumBuffer in
                    let source = source.baseAddress!, sum = sumBuffer.baseAddress!, target = buffer.baseAddress!
                    for y in 0..<height {
                        let weightsOfRow = y &* vertical.stride
                        var sourceRow = source + vertical.first[y] &* sourceRowLength
                        Self.weigh(sourceRow, by: vertical.weights[weightsOfRow], into: sum, count: sourceRowLength)
                        for tap in 1..<max(1, vertical.taps[y]) {
                            sourceRow += sourceRowLength
                            Self.accumulate(sourceRow, by: vertical.weights[weightsOfRow &+ tap], into: sum, count: sourceRowLength)
                        }
                        Self.average(sum, across: horizontal, into: target + y &* rowLength, width: width)
                    }
                }
            }
            initialized = rowLength * height
        }
        return RGBImage(width: width, height: height, pixels: output)
    }

    /// `sum[i] = source[i] × weight` for `count` samples.
    @inline(__always)
    private static func weigh(_ source: UnsafePointer<UInt8>, by weight: Float, into sum: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count {
            sum[i] = Float(source[i]) * weight
            i &+= 1
        }
    }

    /// `sum[i] += source[i] × weight` for `count` samples.
    @inline(__always)
    private static func accumulate(_ source: UnsafePointer<UInt8>, by weight: Float, into sum: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i < count {
            sum[i] += Float(source[i]) * weight
            i &+= 1
        }
    }

    /// One output row: each pixel the weighted sum of the row's pixels under it, rounded.
    @inline(__always)
    private static func average(_ sum: UnsafePointer<Float>, across axis: ResampleAxis, into target: UnsafeMutablePointer<UInt8>, width: Int) {
        axis.first.withUnsafeBufferPointer { first in
            axis.taps.withUnsafeBufferPointer { taps in
                axis.weights.withUnsafeBufferPointer { weights in
                    let low = SIMD4<Float>(repeating: 0), high = SIMD4<Float>(repeating: 255), half = SIMD4<Float>(repeating: 0.5)
                    for x in 0..<width {
                        var rgb = SIMD4<Float>(repeating: 0)
                        var pixel = UnsafeRawPointer(sum + first[x] &* 3)
                        var weight = weights.baseAddress! + x &* axis.stride
                        for _ in 0..<taps[x] {
                            rgb += pixel.loadUnaligned(as: SIMD4<Float>.self) * weight.pointee
                            pixel += 3 &* MemoryLayout<Float>.stride
                            weight += 1
                        }
                        let rounded = (rgb + half).clamped(lowerBound: low, upperBound: high)
                        let out = target + x &* 3
                        out[0] = UInt8(rounded[0])
                        out[1] = UInt8(rounded[1])
                        out[2] = UInt8(rounded[2])
                    }
                }
            }
        }
    }

    /// Scales, keeping the aspect ratio, to the largest size inside w × h (up or down); at least 1×1.
    public func fitted(within w: Int, _ h: Int) -> RGBImage {
        precondition(w > 0 && h > 0, "fit box must be positive (got \(w)×\(h))")
        precondition(width > 0 && height > 0, "cannot fit an empty image")
        let scale = min(Double(w) / Double(width), Double(h) / Double(height))
        let newWidth = min(w, max(1, Int((Double(width) * scale).rounded())))
        let newHeight = min(h, max(1, Int((Double(height) * scale).rounded())))
        return resized(width: newWidth, height: newHeight)
    }

    /// Scales to cover w × h, keeping the aspect ratio, and crops the centre to exactly w × h,
    /// shrinking with `filter`.
    public func filled(to w: Int, _ h: Int, filter: ResampleFilter = .box) -> RGBImage {
        precondition(w > 0 && h > 0, "fill box must be positive (got \(w)×\(h))")
        precondition(width > 0 && height > 0, "cannot fill from an empty image")
        // Crop the source to the target's aspect first: same result as scale-then-crop, less work.
        let targetAspect = Double(w) / Double(h)
        var cropWidth = width, cropHeight = height
        if Double(width) / Double(height) > targetAspect {
            cropWidth = min(width, max(1, Int((Double(height) * targetAspect).rounded())))
        } else {
            cropHeight = min(height, max(1, Int((Double(width) / targetAspect).rounded())))
        }
        return cropped(x: (width - cropWidth) / 2, y: (height - cropHeight) / 2, width: cropWidth, height: cropHeight)
            .resized(width: w, height: h, filter: filter)
    }
}
