extension StringProtocol {
    /// The lines of a key file's text, each without its "\n" or "\r\n" end (the last may have
    /// none), nor any other carriage return at its end: a CR there is never content, and a line
    /// keeping one would be written back with "\n" as a CRLF, which reads as another line.
    /// Split on the scalar: as a Character, "\r\n" is one, and no "\n".
    var fileLines: [Substring] {
        Substring(self).unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var line = line
            while line.last == "\r" { line = line.dropLast() }
            return Substring(line)
        }
    }
}
