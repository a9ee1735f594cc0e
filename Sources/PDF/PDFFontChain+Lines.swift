extension PDFFontChain {
    /// `text` broken into lines no wider than `width` points at `size` points: at spaces, at
    /// the text's own line breaks (kept, so an empty line stays one), and inside words too long
    /// for a line on their own (between characters, so CJK text without spaces wraps as well).
    /// Runs of spaces between words become one; every line holds at least one character.
    public func wrapped(_ text: String, size: Double, width: Double) -> [String] {
        let limit = width * 1000 / size
        let space = Double(layout(" ").width)
        var lines: [String] = []
        let paragraphs = text.split(omittingEmptySubsequences: false) { $0.isNewline }
        for paragraph in paragraphs {
            var line = ""
            var lineWidth = 0.0
            for word in paragraph.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                let wordWidth = Double(layout(String(word)).width)
                if line.isEmpty, wordWidth <= limit {
                    line = String(word)
                    lineWidth = wordWidth
                } else if !line.isEmpty, lineWidth + space + wordWidth <= limit {
                    line += " " + word
                    lineWidth += space + wordWidth
                } else {
                    if !line.isEmpty { lines.append(line) }
                    line = ""
                    lineWidth = 0
                    // The word starts a line: whole if it fits, else in pieces that do.
                    for character in word {
                        let characterWidth = Double(layout(String(character)).width)
                        if !line.isEmpty, lineWidth + characterWidth > limit {
                            lines.append(line)
                            line = ""
                            lineWidth = 0
                        }
                        line.append(character)
                        lineWidth += characterWidth
                    }
                }
            }
            lines.append(line)
        }
        return lines
    }

    /// `text` as it fits in `width` points at `size` points: unchanged when it fits, else cut
    /// between characters and ended with "…" ("..." when no font has "…"), trailing spaces
    /// before it removed. Empty when not even the ellipsis fits.
    public func truncated(_ text: String, size: Double, width: Double) -> String {
        let limit = width * 1000 / size
        guard Double(layout(text).width) > limit else { return text }
        let ellipsis = hasGlyph(for: "\u{2026}") ? "\u{2026}" : "..."
        let ellipsisWidth = Double(layout(ellipsis).width)
        guard ellipsisWidth <= limit else { return "" }
        var kept = ""
        var keptWidth = 0.0
        for character in text {
            let characterWidth = Double(layout(String(character)).width)
            guard keptWidth + characterWidth + ellipsisWidth <= limit else { break }
            kept.append(character)
            keptWidth += characterWidth
        }
        while let last = kept.last, last.isWhitespace { kept.removeLast() }
        return kept + ellipsis
    }
}
