import RPC

extension FuzzTarget {
    /// A scrape connection's bytes, arriving in pieces as TCP delivers them, read by the
    /// endpoint's `ScrapeHTTP.HeadBuffer`: it holds no more than the head limit while it waits,
    /// and its answer does not depend on how the bytes were split.
    static let scrapeHTTP = FuzzTarget(
        name: "scrape-http",
        summary: "the scrape endpoint's HTTP request reader (ScrapeHTTP)",
        maxLength: 16 * 1024
    ) { input, outcome in
        let chunks = FuzzInput.pieces(input, limit: 32)
        var buffer = ScrapeHTTP.HeadBuffer()
        var answer: ScrapeHTTP.Request?
        for chunk in chunks {
            answer = buffer.append(chunk)
            if answer != nil { break }
            // A terminator that starts within the limit may still be arriving: 3 bytes more.
            outcome.check(
                buffer.bytes.count <= ScrapeHTTP.maxHeadBytes + 3,
                "\(buffer.bytes.count) bytes held without an answer (the head limit is \(ScrapeHTTP.maxHeadBytes))")
        }
        guard let answer else {
            outcome.answer("waiting for the rest of the head (\(buffer.bytes.count) bytes held): 408 at the read deadline")
            return
        }
        outcome.answer("\(answer)")
        // All the bytes at once (what a connection sends after its head changes nothing).
        var whole = ScrapeHTTP.HeadBuffer()
        let sent = Array(chunks.joined())
        let wholeAnswer = whole.append(sent)
        outcome.check(
            wholeAnswer == answer,
            "the same \(sent.count) bytes in one piece are answered \(String(describing: wholeAnswer)), in \(chunks.count) pieces \(answer)")
    }
}
