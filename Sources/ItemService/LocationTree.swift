import Proto

/// Every location at one moment, as a tree: paths, depths, subtrees and the order reports print
/// them in. Small (a home has tens or hundreds of places), so it is read whole when needed.
public struct LocationTree: Sendable {
    /// Each location by key, `path` and `depth` filled.
    public private(set) var byKey: [String: Location] = [:]
    /// Depth first, siblings by name (case-insensitive, then key): ListLocations' order.
    public private(set) var ordered: [Location] = []
    private var children: [String: [String]] = [:]
    /// The keys from the top down to each location, itself included.
    private var chains: [String: [String]] = [:]

    /// Builds the tree from rows whose parent may be missing (then it is treated as a top).
    public init(_ locations: [Location]) {
        var byKey = Dictionary(locations.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var children: [String: [String]] = [:]
        for location in locations {
            let parent = byKey[location.parentKey] == nil ? "" : location.parentKey
            children[parent, default: []].append(location.key)
        }
        for (parent, keys) in children {
            children[parent] = keys.sorted { a, b in
                let (x, y) = (byKey[a]!.name.lowercased(), byKey[b]!.name.lowercased())
                return x != y ? x < y : a < b
            }
        }
        var ordered: [Location] = []
        // Iterative depth-first walk: a deep or damaged tree cannot overflow the stack; a cycle
        // (which UpdateLocation refuses) would be cut by `seen`.
        var stack: [(key: String, path: String, depth: Int32)] = (children[""] ?? []).reversed().map { ($0, "", 0) }
        var seen: Set<String> = []
        var chains: [String: [String]] = [:]
        while let (key, parentPath, depth) = stack.popLast() {
            guard seen.insert(key).inserted, var location = byKey[key] else { continue }
            location.path = parentPath.isEmpty ? location.name : parentPath + " / " + location.name
            location.depth = depth
            byKey[key] = location
            ordered.append(location)
            // A parent comes before its children in `ordered`: its chain is known.
            chains[key] = (depth == 0 ? [] : chains[location.parentKey] ?? []) + [key]
            for child in (children[key] ?? []).reversed() { stack.append((child, location.path, depth + 1)) }
        }
        self.byKey = byKey
        self.ordered = ordered
        self.children = children
        self.chains = chains
    }

    /// `root` and every location below it, in `ordered` order; empty when `root` is unknown.
    public func subtree(of root: String) -> [Location] {
        guard byKey[root] != nil else { return [] }
        var out: [Location] = []
        var stack = [root]
        var seen: Set<String> = []
        while let key = stack.popLast() {
            guard seen.insert(key).inserted, let location = byKey[key] else { continue }
            out.append(location)
            stack += (children[key] ?? []).reversed()
        }
        return out
    }

    /// The keys of `root`'s subtree.
    public func subtreeKeys(of root: String) -> Set<String> { Set(subtree(of: root).map(\.key)) }

    /// The direct children's keys of `key` ('' for the tops).
    public func children(of key: String) -> [String] { children[key] ?? [] }

    /// How many levels are below `key` (0 for a leaf).
    public func height(of key: String) -> Int32 {
        let depth = byKey[key]?.depth ?? 0
        return (subtree(of: key).map(\.depth).max() ?? depth) - depth
    }

    /// The keys from the top down to `key`, itself included; none for an unknown key.
    public func ancestors(of key: String) -> [String] { chains[key] ?? [] }

    /// Each location's count and those of every location below it, from counts per location
    /// (`counts[key]`), in one pass from the leaves up.
    public func subtreeTotals(_ counts: [String: Int64]) -> [String: Int64] {
        var totals: [String: Int64] = [:]
        for location in ordered.reversed() {
            let total = (counts[location.key] ?? 0) + (totals[location.key] ?? 0)
            totals[location.key] = total
            if location.depth > 0 { totals[location.parentKey, default: 0] += total }
        }
        return totals
    }
}
