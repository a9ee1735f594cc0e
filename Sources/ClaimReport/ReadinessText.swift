import Proto

/// `homepwner report readiness` for people: per location the items, the score and how many
/// lack each kind of evidence, then the items with the worst gaps.
public enum ReadinessText {
    /// The evidence kinds a claim asks for, in the order GetReadiness counts them.
    static let kinds: [Evidence] = [.photo, .receipt, .serial, .value, .purchaseDate]

    /// The reply as tables.
    public static func render(_ readiness: GetReadinessResponse) -> String {
        let overall = readiness.overall ?? ReadinessGroup()
        var out = "Claim readiness: \(overall.scorePercent) % of the evidence is recorded for \(ClaimText.plural(overall.itemCount, "item"))"
        out += overall.name.isEmpty || overall.name == "Everything" ? "\n\n" : " in \(overall.name)\n\n"
        var table = TextTable(["location", "items", "score"] + kinds.map { "no " + ClaimText.evidence($0) })
        for group in [overall] + readiness.locations {
            let name = group.name.isEmpty ? (group.key.isEmpty ? "No location" : group.key) : group.name
            table.add([name, ClaimText.count(group.itemCount), "\(group.scorePercent) %"] + kinds.map { kind in
                ClaimText.count(group.missing.first { $0.evidence == kind }?.missing ?? 0)
            })
        }
        out += table.text
        let gaps = overall.gaps
        out += "\n"
        guard !gaps.isEmpty else {
            return out + "No gaps: every item has a photo, a receipt, a serial, a value and a purchase date.\n"
        }
        out += "Worst gaps (the items lacking most first\(overall.itemCount > Int64(gaps.count) ? ", at most \(gaps.count)" : "")):\n"
        var gapTable = TextTable(["item", "key", "lacks"], alignments: [.left, .left, .left])
        for gap in gaps {
            gapTable.add([gap.name, gap.itemKey, gap.missing.map(ClaimText.evidence).joined(separator: ", ")])
        }
        return out + gapTable.text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : "  " + $0 }
            .joined(separator: "\n")
    }
}
