/// How far a report has come, for a progress bar.
public struct ClaimProgress: Sendable, Hashable {
    /// Items written.
    public var itemsWritten: Int64
    /// Items in the report.
    public var itemTotal: Int64
    /// Photos looked up so far.
    public var photosWritten: Int64
    /// The section being written.
    public var section: String

    /// The share done, 0…1.
    public var fraction: Double { itemTotal > 0 ? Double(itemsWritten) / Double(itemTotal) : 1 }
}
