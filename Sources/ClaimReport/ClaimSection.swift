/// A part of the report: the items directly in one location, or those in none.
public struct ClaimSection: Sendable, Hashable {
    /// The location's key; empty for the items in no location.
    public let key: String
    /// The location's path ("Home / Kitchen"), or "No location".
    public let name: String
    /// Items directly in it (not in its sublocations).
    public let itemCount: Int64

    /// A section of `itemCount` items.
    public init(key: String, name: String, itemCount: Int64) {
        self.key = key
        self.name = name
        self.itemCount = itemCount
    }

    /// The name of the section of items in no location.
    public static let noLocationName = "No location"
}
