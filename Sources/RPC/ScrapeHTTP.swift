import CurveAuth

/// The HTTP/1.0 and 1.1 that a scrape endpoint speaks, as plain values: a request head read
/// from a connection's bytes, and the reply it gets. No socket here, so tests drive it directly.
package enum ScrapeHTTP {
    /// The largest request head (request line and headers) read: beyond it, 431.
    package static let maxHeadBytes = 8 * 1024

    /// What a request asks for, once its head is complete.
    package enum Request: Equatable {
        /// GET or HEAD of /metrics.
        case metrics(head: Bool)
        /// GET or HEAD of /.
        case index(head: Bool)
        /// An error reply, with no call to the body.
        case refused(Status)
    }

    /// The statuses a scrape endpoint answers.
    package enum Status: Int, Equatable {
        case ok = 200
        case badRequest = 400
        case unauthorized = 401
        case notFound = 404
        case methodNotAllowed = 405
        case requestTimeout = 408
        case headersTooLarge = 431
        case serviceUnavailable = 503
        case versionNotSupported = 505

        var reason: String {
            switch self {
            case .ok: "OK"
            case .badRequest: "Bad Request"
            case .unauthorized: "Unauthorized"
            case .notFound: "Not Found"
            case .methodNotAllowed: "Method Not Allowed"
            case .requestTimeout: "Request Timeout"
            case .headersTooLarge: "Request Header Fields Too Large"
            case .serviceUnavailable: "Service Unavailable"
            case .versionNotSupported: "HTTP Version Not Supported"
            }
        }
    }

    /// The bytes of one connection until its head is complete: at most `maxHeadBytes` + 3 (the
    /// rest of a terminator that starts within the limit) plus one received chunk are ever held.
    package struct HeadBuffer {
        package private(set) var bytes: [UInt8] = []
        /// The token every request must present (`Authorization: Bearer …`); nil: none.
        package var token: BearerToken?

        package init(token: BearerToken? = nil) { self.token = token }

        /// Adds `chunk`; returns the request once the head is complete (or too large), nil while
        /// more is needed.
        package mutating func append(_ chunk: [UInt8]) -> Request? {
            // The terminator may straddle the previous chunk's end.
            let searchFrom = max(0, bytes.count - 3)
            bytes.append(contentsOf: chunk)
            if let end = ScrapeHTTP.headEnd(bytes, from: searchFrom) {
                guard end <= ScrapeHTTP.maxHeadBytes else { return .refused(.headersTooLarge) }
                return ScrapeHTTP.parse(bytes[..<end], token: token)
            }
            return bytes.count > ScrapeHTTP.maxHeadBytes + 3 ? .refused(.headersTooLarge) : nil
        }
    }

    /// The index of the first "\r\n\r\n" at or after `from`, if any.
    static func headEnd(_ bytes: [UInt8], from: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = from
        while index + 3 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }

    /// Reads a request head (without its final "\r\n\r\n"). With a `token`, a well-formed
    /// request without `Authorization: Bearer <token>` is refused 401.
    static func parse(_ head: ArraySlice<UInt8>, token: BearerToken? = nil) -> Request {
        let lines = head.split(separator: 10, omittingEmptySubsequences: false).map { line in
            line.last == 13 ? line.dropLast() : line
        }
        guard let requestLine = lines.first else { return .refused(.badRequest) }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte),
              let target = String(validating: parts[1], as: UTF8.self), target.first == "/",
              target.utf8.allSatisfy({ $0 > 32 && $0 < 127 }),
              let version = String(validating: parts[2], as: UTF8.self)
        else { return .refused(.badRequest) }
        // Every header line needs a name and a colon; only Authorization is used.
        var authorization: ArraySlice<UInt8>?
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 58), colon > line.startIndex,
                  line[line.startIndex..<colon].allSatisfy(isTokenByte)
            else { return .refused(.badRequest) }
            if line[line.startIndex..<colon].elementsEqual("authorization".utf8, by: { lowercased($0) == $1 }) {
                authorization = trimmed(line[(colon + 1)...])
            }
        }
        guard version.count == 8, version.hasPrefix("HTTP/"), version.utf8.dropFirst(5).elementsEqual("x.x".utf8, by: { byte, pattern in
            pattern == 46 ? byte == 46 : (48...57).contains(byte)
        }) else { return .refused(.badRequest) }
        guard version.hasPrefix("HTTP/1.") else { return .refused(.versionNotSupported) }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard method == "GET" || method == "HEAD" else { return .refused(.methodNotAllowed) }
        if let token, !presents(authorization, token) { return .refused(.unauthorized) }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        switch path {
        case "/metrics": return .metrics(head: method == "HEAD")
        case "/": return .index(head: method == "HEAD")
        default: return .refused(.notFound)
        }
    }

    /// Whether an Authorization header value is `Bearer <token>` (the scheme in any case).
    private static func presents(_ authorization: ArraySlice<UInt8>?, _ token: BearerToken) -> Bool {
        guard let value = authorization, value.count > 7,
              value.prefix(7).elementsEqual("bearer ".utf8, by: { lowercased($0) == $1 })
        else { return false }
        return token.matches(trimmed(value.dropFirst(7)))
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 32 || first == 9 { slice = slice.dropFirst() }
        while let last = slice.last, last == 32 || last == 9 { slice = slice.dropLast() }
        return slice
    }

    /// An ASCII letter in lower case; other bytes as they are.
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte + 32 : byte
    }

    /// RFC 9110 token characters (methods, header names).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// The Prometheus text exposition format's content type.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A whole reply: status line, headers and (unless `head`) the body; the connection is
    /// closed after it, which `Connection: close` says.
    static func reply(_ status: Status, contentType: String = "text/plain; charset=utf-8", body: String, head: Bool = false) -> [UInt8] {
        let bodyBytes = Array(body.utf8)
        var text = "HTTP/1.1 \(status.rawValue) \(status.reason)\r\n"
        text += "Content-Type: \(contentType)\r\n"
        text += "Content-Length: \(bodyBytes.count)\r\n"
        if status == .methodNotAllowed { text += "Allow: GET, HEAD\r\n" }
        if status == .unauthorized { text += "WWW-Authenticate: Bearer realm=\"homepwner metrics\"\r\n" }
        text += "Connection: close\r\n\r\n"
        var bytes = Array(text.utf8)
        if !head { bytes += bodyBytes }
        return bytes
    }

    /// The reply to a refused request.
    static func refusal(_ status: Status) -> [UInt8] {
        reply(status, body: "\(status.rawValue) \(status.reason)\n")
    }
}
