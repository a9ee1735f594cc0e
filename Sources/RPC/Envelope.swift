import Proto

/// The frames of PROTOCOL.md: [empty delimiter][header][message].
enum Envelope {
    /// Headers are small; anything bigger is garbage.
    static let headerLimit = DecodingOptions(maxBytes: 64 * 1024)

    static func request(_ header: RequestHeader, _ body: [UInt8]) -> [[UInt8]] {
        [[], header.serializedBytes(), body]
    }

    static func reply(
        to envelope: [[UInt8]], requestID: UInt64, code: StatusCode, message: String = "",
        retryAfterMilliseconds: UInt32 = 0, body: [UInt8] = []
    ) -> [[UInt8]] {
        var header = ResponseHeader()
        header.requestId = requestID
        header.code = code.rawValue
        header.message = message
        header.retryAfterMs = retryAfterMilliseconds
        return envelope + [[], header.serializedBytes(), code == .ok ? body : []]
    }
}
