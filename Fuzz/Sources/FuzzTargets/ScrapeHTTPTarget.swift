import RPC

extension FuzzTarget {
    /// A scrape connection's bytes, arriving in pieces as TCP delivers them, read by the
    /// endpoint's `ScrapeHTTP.HeadBuffer`: it holds at most the head limit while it waits, and
    /// its answer does not depend on how the bytes were split.
    static let scrapeHTTP = FuzzTarget(
        name: "scrape-http",
        summary: "the scrape endpoint's HTTP request reader (ScrapeHTTP)",
        maxLength: 16 * 1024
    ) { input, outcome in
        let chunks = FuzzInput.pieces(input, limit: 32)
        var buffer = ScrapeHTTP.HeadBuffer()
        var answer: ScrapeHTTP.Request?
        var read: [UInt8] = []
        for chunk in chunks {
            read += chunk
            answer = buffer.append(chunk)
            if answer != nil { break }
            outcome.check(
                buffer.bytes.count <= ScrapeHTTP.maxHeadBytes,
                "\(buffer.bytes.count) bytes held without an answer (the head limit is \(ScrapeHTTP.maxHeadBytes))")
        }
        guard let answer else {
            outcome.answer("waiting for the rest of the head (\(buffer.bytes.count) bytes held): 408 at the read deadline")
            return
        }
        outcome.answer("\(answer)")
        var whole = ScrapeHTTP.HeadBuffer()
        let wholeAnswer = whole.append(read)
        outcome.check(
            wholeAnswer == answer,
            "the same \(read.count) bytes in one piece are answered \(String(describing: wholeAnswer)), in \(chunks.count) pieces \(answer)")
    }
}
