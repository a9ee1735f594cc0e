import Proto
import ZMQ

/// A multipart message to send: small frames, then the body.
struct OutgoingMessage: Sendable {
    var head: [[UInt8]]
    var body: MessageBody
}

extension Socket {
    /// Sends the head frames and the body as one message; a frame body is not copied.
    func send(_ message: OutgoingMessage, dontWait: Bool = false) throws -> Bool {
        switch message.body.storage {
        case .bytes(let bytes): try send(message.head + [bytes], dontWait: dontWait)
        case .frame(let frame): try send(message.head, body: frame, dontWait: dontWait)
        }
    }
}

/// The frames of docs/protocol.md: [empty delimiter][header][message].
enum Envelope {
    /// Headers are small; anything bigger is garbage. At most 64 KiB and 64 metadata entries: a header is decoded on the I/O thread for every
    /// call, and 8,000 tiny entries (what 64 KiB holds) took it about 2 ms each.
    static let headerLimit = DecodingOptions(maxBytes: 64 * 1024, maxValuesPerField: maxMetadataEntries)

    /// The most `metadata` entries a request header may carry.
    static let maxMetadataEntries = 64

    static func request(_ header: RequestHeader, _ body: MessageBody) -> OutgoingMessage {
        OutgoingMessage(head: [[], header.serializedBytes()], body: body)
    }

    static func reply(
        to envelope: [[UInt8]], requestID: UInt64, code: StatusCode, message: String = "",
        retryAfterMilliseconds: UInt32 = 0, reason: String = "", body: MessageBody = .empty
    ) -> OutgoingMessage {
        var header = ResponseHeader()
        header.requestId = requestID
        header.code = code.rawValue
        header.message = message
        header.retryAfterMs = retryAfterMilliseconds
        header.reason = reason
        return OutgoingMessage(head: envelope + [[], header.serializedBytes()], body: code == .ok ? body : .empty)
    }
}
