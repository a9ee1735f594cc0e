import CLISupport
import Proto
import Runtime

extension FuzzTarget {
    /// `homepwner call METHOD JSON`: the first line names the method as a person types it
    /// (`MethodLookup`), the rest is the JSON converted to its request (`ProtoJSON.encode`). What
    /// the converter writes must be a request the server decodes, and its JSON print must read
    /// back as the same JSON.
    static let callJSON = FuzzTarget(
        name: "call-json",
        summary: "homepwner call's method lookup and JSON-to-protobuf converter (ProtoJSON)",
        maxLength: 4096
    ) { input, outcome in
        let text = String(decoding: input, as: UTF8.self)
        let newline = text.firstIndex(of: "\n") ?? text.endIndex
        let spelling = String(text[..<newline])
        let json = newline == text.endIndex ? "" : String(text[text.index(after: newline)...])
        guard let method = MethodLookup.method(named: spelling) else {
            outcome.answer("no method \"\(spelling)\"; suggestions: \(MethodLookup.suggestions(for: spelling).prefix(3))")
            return
        }
        let body: [UInt8]
        do {
            body = try ProtoJSON.encode(json: json, as: method.requestType)
        } catch {
            outcome.refused("ProtoJSON.encode", error)
            return
        }
        outcome.answer("\(method.path): \(body.count) bytes")
        guard let type = Messages.types[method.requestType] else {
            outcome.check(false, "\(method.path): no generated type for \(method.requestType)")
            return
        }
        serverDecodes(type, body, &outcome)
        Messages.json(body, as: method.requestType, parser: "ProtoJSON.decode", &outcome)
    }

    /// Whether the server decodes what the CLI sends.
    private static func serverDecodes<M: ProtoMessage>(_ type: M.Type, _ body: [UInt8], _ outcome: inout FuzzOutcome) {
        let message = Messages.decoded(parser: "server decode", &outcome) { () throws(ProtoDecodingError) in
            try M(serializedBytes: body, options: DecodingOptions(maxBytes: Defaults.maxMessageBytes))
        }
        outcome.check(message != nil, "the server refuses the \(body.count) bytes ProtoJSON.encode wrote for \(M.protoName)")
    }
}
