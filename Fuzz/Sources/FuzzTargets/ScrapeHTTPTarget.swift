import CurveAuth
import RPC

extension FuzzTarget {
    /// A scrape connection's bytes, arriving in pieces as TCP delivers them, read by the
    /// endpoint's `ScrapeHTTP.HeadBuffer`: it holds no more than the head limit while it waits,
    /// and its answer does not depend on how the bytes were split. With a bearer token
    /// (`--metrics-token`) the same head gets the same answer, or 401 where it would be served or
    /// 404; 200 only with `Authorization: Bearer` and the token.
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
        var guarded = ScrapeHTTP.HeadBuffer(token: FuzzSeeds.metricsToken)
        let guardedAnswer = guarded.append(sent)
        outcome.answer("with a token: \(String(describing: guardedAnswer))")
        switch answer {
        case .metrics, .index, .refused(.notFound):
            let presented = sent.containsToken(FuzzSeeds.metricsToken)
            outcome.check(
                guardedAnswer == answer && presented || guardedAnswer == .refused(.unauthorized),
                "with a token the head answered \(answer) is answered \(String(describing: guardedAnswer)) (token \(presented ? "" : "not ")in the head)")
        default:
            outcome.check(
                guardedAnswer == answer,
                "with a token the head refused \(answer) is answered \(String(describing: guardedAnswer))")
        }
    }
}

extension [UInt8] {
    /// Whether the token's bytes occur in these (a guarded head served without them is a leak).
    fileprivate func containsToken(_ token: BearerToken) -> Bool {
        let needle = token.bytes
        guard count >= needle.count else { return false }
        return (0...(count - needle.count)).contains { start in self[start..<(start + needle.count)].elementsEqual(needle) }
    }
}
