/// The user's manual order of items: row ids with sparse integer positions.
///
/// A move changes the position of the moved item only, halfway between its new neighbours;
/// when two neighbours have no room left between them, a window around the spot is spread
/// out evenly (list labelling), so a move costs O(1) rows amortised, never a renumbering of
/// every item. Lookups by index are O(1). A value type: callers change a copy, persist the
/// returned changes, and keep the copy only once they are stored.
public struct ManualOrder: Sendable, Equatable {
    /// One item in the order.
    public struct Entry: Sendable, Equatable {
        /// The item's row id.
        public var id: Int64
        /// Its sort key in the manual order.
        public var position: Int64

        /// An entry.
        public init(id: Int64, position: Int64) {
            self.id = id
            self.position = position
        }
    }

    /// The gap between positions given to appended items and to spread windows.
    public static let gap: Int64 = 1 << 20

    /// The entries, first to last.
    public private(set) var entries: [Entry]

    /// An order from entries sorted by position.
    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// The number of items.
    public var count: Int { entries.count }

    /// The position for an item appended at the end.
    public func nextPosition() -> Int64 {
        guard let last = entries.last else { return Self.gap }
        let (sum, overflow) = last.position.addingReportingOverflow(Self.gap)
        // Eight quadrillion appends away; then appends restart below the first item.
        return overflow ? (entries.first!.position - Self.gap) : sum
    }

    /// Appends an item at the end.
    public mutating func append(id: Int64, position: Int64) {
        entries.append(Entry(id: id, position: position))
    }

    /// Removes an item; returns false when it is not in the order.
    @discardableResult
    public mutating func remove(id: Int64) -> Bool {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: index)
        return true
    }

    /// Moves the item at `from` to `to` as the seed's `moveItemAtIndex:toIndex:` does (remove,
    /// then insert at `to`); both must be in `0..<count`. Returns the entries whose position changed.
    public mutating func move(from: Int, to: Int) -> [Entry] {
        precondition(entries.indices.contains(from) && entries.indices.contains(to), "move \(from) → \(to) outside 0..<\(count)")
        guard from != to else { return [] }
        var moved = entries.remove(at: from)
        let before = to > 0 ? entries[to - 1].position : nil
        let after = to < entries.count ? entries[to].position : nil
        switch (before, after) {
        case (nil, nil):
            moved.position = Self.gap
        case let (nil, after?):
            moved.position = after - Self.gap
        case let (before?, nil):
            moved.position = before + Self.gap
        case let (before?, after?) where after - before >= 2:
            moved.position = before + (after - before) / 2
        default:
            entries.insert(moved, at: to)
            return spread(around: to)
        }
        entries.insert(moved, at: to)
        return [moved]
    }

    /// Spreads the smallest window around `index` whose bounds leave at least `gap / 64`
    /// between neighbours; returns the entries it renumbered.
    private mutating func spread(around index: Int) -> [Entry] {
        let minimumStep = Self.gap / 64
        var radius = 1
        while true {
            let low = max(0, index - radius)
            let high = min(entries.count - 1, index + radius)
            let size = Int64(high - low + 1)
            // Past either end of the list the room is unbounded: one gap per entry.
            let lowerBound = low > 0 ? entries[low - 1].position : entries[low].position - size * Self.gap
            let upperBound = high < entries.count - 1 ? entries[high + 1].position : entries[high].position + size * Self.gap
            let step = (upperBound - lowerBound) / (size + 1)
            if step >= minimumStep || (low == 0 && high == entries.count - 1) {
                let step = max(step, 1)
                for offset in 0..<Int(size) {
                    entries[low + offset].position = lowerBound + step * Int64(offset + 1)
                }
                return Array(entries[low...high])
            }
            radius *= 2
        }
    }
}
