import Proto

extension FuzzTarget {
    /// Wire bytes decoded as any message of proto/ (the first byte picks which): whole, with a
    /// large bytes field left in place as servers do for photos (the second byte may splice one
    /// of 64 KiB into the input, as no input of libFuzzer's reaches that size), and printed as
    /// JSON as `homepwner call` prints a reply.
    static let protoMessage = FuzzTarget(
        name: "proto-message",
        summary: "every message's decode (WireScan, the arena's budget, LargeBytes) and its JSON printing",
        maxLength: 4096
    ) { input, outcome in
        guard input.count >= 2 else {
            outcome.answer("\(input.count) bytes: too short to pick a message")
            return
        }
        let types = ProtoCatalog.messageTypes
        let type = types[Int(input[0]) % types.count]
        let flags = input[1]
        var bytes = [UInt8](input[2...])
        var spliced: UInt32?
        if flags & 1 != 0 {
            let number = UInt32(flags >> 1 & 15) + 1
            let at = bytes.count * Int(flags >> 5) / 7
            bytes.insert(contentsOf: protoFieldHeader(number: number, length: largeField) + [UInt8](repeating: 0x5A, count: largeField), at: at)
            spliced = number
        }
        decodeMessage(type, bytes, leaving: spliced, &outcome)
    }

    /// A large field's size: just over where `decode(leavingLargeBytesField:)` starts to leave it.
    private static let largeField = 64 * 1024 + 1

    private static func decodeMessage<M: ProtoMessage>(_ type: M.Type, _ bytes: [UInt8], leaving spliced: UInt32?, _ outcome: inout FuzzOutcome) {
        let message = Messages.decoded(parser: "decode", &outcome) { () throws(ProtoDecodingError) in
            try M(serializedBytes: bytes, options: .default)
        }
        if let field = spliced ?? Messages.largeBytesField(of: M.protoName) {
            bytes.withUnsafeBytes { buffer in
                Messages.decode(M.self, buffer, options: .default, leaving: field, plainly: message != nil, parser: "decode", &outcome)
            }
        }
        let printed = Messages.json(bytes, as: M.protoName, parser: "ProtoJSON.decode", &outcome)
        outcome.check(message == nil || printed, "\(M.protoName) decodes but does not print as JSON")
    }
}
