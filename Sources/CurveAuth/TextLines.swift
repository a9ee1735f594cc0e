extension StringProtocol {
    /// The lines of a key file's text, each without its "\n" or "\r\n" end (the last may have
    /// none). Split on the scalar: as a Character, "\r\n" is one, and no "\n".
    var fileLines: [Substring] {
        Substring(self).unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.last == "\r" ? Substring(line.dropLast()) : Substring(line)
        }
    }
}
