extension JPEG {
    /// Calls `body` with `data[..<end]` as libjpeg reads it once it has skipped the extraneous
    /// bytes of `runs` (the walker's, in order): in place when there are none before `end`, else
    /// a copy without them. TurboJPEG, run with TJFLAG_STOPONWARNING, would stop at the warning
    /// they cause; without them it decodes the same pixels and still stops at any other warning.
    static func withoutExtraneous(
        _ data: UnsafeRawBufferPointer, _ runs: [Range<Int>], end: Int, _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        let end = min(end, data.count)
        let before = runs.prefix { $0.lowerBound < end }
        guard !before.isEmpty else { return body(UnsafeRawBufferPointer(rebasing: data[..<end])) }
        var kept: [UInt8] = []
        kept.reserveCapacity(end - before.reduce(0) { $0 + $1.count })
        var from = 0
        for run in before {
            kept.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[from..<run.lowerBound]))
            from = min(run.upperBound, end)
        }
        kept.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[from..<end]))
        kept.withUnsafeBytes(body)
    }
}
