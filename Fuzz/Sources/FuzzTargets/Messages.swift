import Proto

/// The messages of proto/ as the targets decode them: by full name, with the checks every
/// decode gets.
enum Messages {
    /// Every generated message type by full proto name.
    static let types: [String: any ProtoMessage.Type] = Dictionary(
        uniqueKeysWithValues: ProtoCatalog.messageTypes.map { ($0.protoName, $0) })

    /// The number of a message's top-level singular `bytes` field (PutImageRequest's `data`),
    /// which a server may leave where it lies (`register(_:largeBytesField:)`); nil when it has none.
    static func largeBytesField(of name: String) -> UInt32? {
        ProtoRegistry.fields(of: name)?.first { $0.type == .bytes && !$0.isRepeated }.map { UInt32($0.number) }
    }

    /// A message `decode` made (or the refusal it threw), recorded as what `parser` answered;
    /// a message must survive its own encoding (decoded again, it encodes to the same bytes).
    static func decoded<M: ProtoMessage>(
        parser: String, _ outcome: inout FuzzOutcome, _ decode: () throws(ProtoDecodingError) -> M
    ) -> M? {
        let message: M
        do {
            message = try decode()
        } catch {
            outcome.refused(parser, error)
            return nil
        }
        let encoded = message.serializedBytes()
        outcome.answer("\(parser): \(M.protoName), \(encoded.count) bytes encoded again")
        do {
            let again = try M(serializedBytes: encoded, options: .default)
            outcome.check(again.serializedBytes() == encoded, "\(parser): \(M.protoName) encodes differently once decoded from its own encoding")
        } catch {
            outcome.check(false, "\(parser): \(M.protoName)'s own encoding (\(encoded.count) bytes) does not decode: \(error)")
        }
        return message
    }

    /// Decodes `buffer` as `type` leaving field `field` where it lies, as a server does for a
    /// large photo; whether it decodes must not depend on that.
    static func decode<M: ProtoMessage>(
        _ type: M.Type, _ buffer: UnsafeRawBufferPointer, options: DecodingOptions, leaving field: UInt32,
        plainly decoded: Bool, parser: String, _ outcome: inout FuzzOutcome
    ) {
        do {
            let (_, range) = try M.decode(buffer, options: options, leavingLargeBytesField: field)
            outcome.answer("\(parser): \(M.protoName) with field \(field) left in place: \(range.map { "\($0)" } ?? "nothing left")")
            outcome.check(decoded, "\(parser): \(M.protoName) decodes when field \(field) is left in place, but not whole")
            if let range {
                outcome.check(
                    range.lowerBound >= 0 && range.upperBound <= buffer.count && range.count >= 64 * 1024,
                    "\(parser): field \(field) left at \(range) of a \(buffer.count)-byte input")
            }
        } catch {
            outcome.refused(parser, error)
            outcome.check(!decoded, "\(parser): \(M.protoName) decodes whole, but not with field \(field) left in place: \(error)")
        }
    }

    /// Prints `bytes` as JSON, as `homepwner call` prints a reply, and checks that the JSON
    /// converts back to a message that prints the same. Returns whether it printed.
    @discardableResult
    static func json(_ bytes: [UInt8], as name: String, parser: String, _ outcome: inout FuzzOutcome) -> Bool {
        let printed: String
        do {
            printed = try ProtoJSON.decode(bytes, as: name)
        } catch {
            outcome.refused(parser, error)
            return false
        }
        outcome.answer("\(parser): printed \(printed.utf8.count) bytes of JSON")
        do {
            let encoded = try ProtoJSON.encode(json: printed, as: name)
            let again = try ProtoJSON.decode(encoded, as: name)
            outcome.check(again == printed, "\(parser): \(name) printed as JSON reads back as different JSON:\n\(printed)\n\(again)")
        } catch {
            outcome.check(false, "\(parser): \(name) printed as JSON does not read back: \(error)\n\(printed)")
        }
        return true
    }
}
