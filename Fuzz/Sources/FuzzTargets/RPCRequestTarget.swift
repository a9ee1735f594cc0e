import Proto
import RPC
import Runtime
import ZMQ

extension FuzzTarget {
    /// A ROUTER socket's frames (routing id, delimiter, RequestHeader, body) read as RPCServer
    /// reads them (`RequestFrames`: the envelope, the header under its limits and WireScan),
    /// then the body decoded as the request of the method the header names, under the server's
    /// limits, whole and with its large bytes field left in place.
    static let rpcRequest = FuzzTarget(
        name: "rpc-request",
        summary: "RPCServer's reading of a request's frames, the header and every request message's decode (WireScan, protobuf-c)",
        maxLength: 8192
    ) { input, outcome in
        let frames = FuzzInput.pieces(input).map { Frame($0) }
        switch RequestFrames.read(frames) {
        case .dropped:
            outcome.answer("dropped: \(frames.count) frame(s)")
            outcome.check(frames.count < 2, "\(frames.count) frames were dropped unanswered")
        case let .refused(identity, message):
            outcome.refused("RequestFrames", message: message)
            outcome.check(identity.first == frames.first?.bytes, "a refusal would not go back to the routing id it came from")
        case let .request(identity, header, body):
            outcome.answer("request: \(header.method), id \(header.requestId), \(body.count)-byte body")
            outcome.check(identity.first == frames.first?.bytes && !identity.contains([]), "the envelope \(identity) is not the frames before the delimiter")
            guard let method = ProtoCatalog.methods.first(where: { $0.path == header.method }) else {
                outcome.answer("no method \"\(header.method)\": UNIMPLEMENTED")
                return
            }
            guard let type = Messages.types[method.requestName] else {
                outcome.check(false, "\(method.path): no generated type for \(method.requestName)")
                return
            }
            decodeRequest(type, body, outcome: &outcome)
        }
    }

    /// The request body decoded as the server's handlers decode it.
    private static func decodeRequest<M: ProtoMessage>(_ type: M.Type, _ body: Frame, outcome: inout FuzzOutcome) {
        let options = DecodingOptions(maxBytes: Defaults.maxMessageBytes)
        let message = Messages.decoded(parser: "request body", &outcome) { () throws(ProtoDecodingError) in
            try M(frame: body, options: options)
        }
        guard let field = Messages.largeBytesField(of: M.protoName) else { return }
        body.withUnsafeBytes { buffer in
            Messages.decode(M.self, buffer, options: options, leaving: field, plainly: message != nil, parser: "request body", &outcome)
        }
    }
}
