/// Rows as aligned columns for a terminal: text columns left, numbers right, two spaces apart.
public struct TextTable: Sendable {
    /// How a column lines up.
    public enum Alignment: Sendable { case left, right }

    /// The first row.
    public var header: [String]
    /// Each column's alignment.
    public var alignments: [Alignment]
    /// The rows below the header.
    public var rows: [[String]] = []

    /// A table with `header`; `alignments` defaults to the first column left, the others right.
    public init(_ header: [String], alignments: [Alignment]? = nil) {
        self.header = header
        self.alignments = alignments ?? [.left] + Array(repeating: .right, count: max(0, header.count - 1))
    }

    /// Adds a row.
    public mutating func add(_ row: [String]) { rows.append(row) }

    /// The table as lines, each ending in a newline; trailing spaces trimmed.
    public var text: String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            var line = ""
            for column in header.indices {
                let cell = column < row.count ? row[column] : ""
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                line += (column > 0 ? "  " : "") + (alignments[column] == .left ? cell + pad : pad + cell)
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line + "\n"
        }.joined()
    }
}
