import Proto
import ZMQ

/// How the server reads the frames of one request (docs/protocol.md): the envelope up to the
/// empty delimiter, the `RequestHeader`, the body. A plain function of the frames, so the fuzz
/// targets drive it without a socket.
package enum RequestFrames {
    /// What a message's frames are.
    package enum Reading {
        /// A request: whom to answer (the envelope, sent back as it came), its header and body.
        case request(identity: [[UInt8]], header: RequestHeader, body: Frame)
        /// Not a request: answered INVALID_ARGUMENT with `message`, sent to `identity` under
        /// request id 0 (there is no header to take one from).
        case refused(identity: [[UInt8]], message: String)
        /// Only a routing id: nothing to answer.
        case dropped
    }

    /// Splits `frames` (the routing id first, as a ROUTER socket receives them) and decodes the
    /// header under `Envelope.headerLimit`.
    package static func read(_ frames: [Frame]) -> Reading {
        guard frames.count >= 2 else { return .dropped }
        // The envelope is every frame before the empty delimiter: the peer's routing id, plus
        // whatever a proxy or a REQ socket with ZMQ_REQ_CORRELATE put in front. It goes back as is.
        let delimiter = frames.firstIndex(where: \.isEmpty) ?? frames.count
        let identity = frames[0..<max(1, delimiter)].map(\.bytes)
        guard delimiter >= 1, delimiter < frames.count, frames.count - delimiter == 3 else {
            let got = frames.count - 1
            var why = "expected 3 frames (empty delimiter, RequestHeader, request) after the routing id, got \(got)"
            if delimiter != 1 && got > 0 {
                why += "; frame 0 must be the empty delimiter (got \(frames[1].count) bytes)"
            }
            return .refused(identity: [frames[0].bytes], message: why)
        }
        do {
            let header = try RequestHeader(frame: frames[delimiter + 1], options: Envelope.headerLimit)
            return .request(identity: identity, header: header, body: frames[delimiter + 2])
        } catch {
            return .refused(identity: identity, message: "request header: \(error)")
        }
    }
}
