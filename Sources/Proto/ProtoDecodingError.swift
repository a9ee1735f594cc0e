/// Why bytes were not accepted as a message.
public enum ProtoDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The encoding is larger than DecodingOptions.maxBytes.
    case tooLarge(type: String, size: Int, limit: Int)
    /// protobuf-c could not parse the bytes as this message type.
    case malformed(type: String, size: Int)
    /// The encoding breaks another limit of DecodingOptions (unknown fields, values of one
    /// field, nesting, memory); `reason` names the field and the limit.
    case overLimit(type: String, reason: String)
    /// A string field holds a NUL character, which protobuf-c would cut the text at; `field`
    /// is its path from the message down ("CreateItemRequest.notes").
    case nulInText(type: String, field: String)

    public var description: String {
        switch self {
        case let .tooLarge(type, size, limit):
            return "\(type) is \(size) bytes, over the limit of \(limit) bytes"
        case let .malformed(type, size):
            return "\(size) bytes do not parse as \(type)"
        case let .overLimit(_, reason):
            return reason
        case let .nulInText(_, field):
            return "\(field) holds a NUL character (U+0000), which no text field accepts"
        }
    }
}
