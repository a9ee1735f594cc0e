/// grpcurl-style conversion between proto3 JSON and the protobuf wire format, for every message of
/// proto/ without per-type code: both directions are driven by protobuf-c's runtime descriptors.
///
/// - `encode(json:as:)` parses JSON with Foundation, writes the wire format in Swift
///   (ProtoJSON+Encode.swift, ProtoWireWriter.swift) and has protobuf-c unpack the result to verify it.
/// - `decode(_:as:options:)` unpacks with protobuf-c and prints the C struct as JSON
///   (ProtoJSON+Decode.swift, JSONText.swift).
public enum ProtoJSON {
    /// How `decode` prints JSON.
    public struct JSONOptions: Sendable, Hashable {
        /// Keys as in the .proto file ("value_in_dollars") instead of lowerCamel ("valueInDollars").
        public var useProtoNames: Bool
        /// Print every field, defaults included (absent messages as null), so the shape is visible.
        public var emitDefaults: Bool
        /// Two-space indented, one field per line; otherwise one line without spaces.
        public var prettyPrinted: Bool
        /// Size limit applied before protobuf-c sees the bytes.
        public var limits: DecodingOptions

        public init(
            useProtoNames: Bool = false,
            emitDefaults: Bool = true,
            prettyPrinted: Bool = true,
            limits: DecodingOptions = .default
        ) {
            self.useProtoNames = useProtoNames
            self.emitDefaults = emitDefaults
            self.prettyPrinted = prettyPrinted
            self.limits = limits
        }
    }
}

/// Why JSON could not become a message, or bytes could not become JSON.
public struct ProtoJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The category of failure, for code that reacts to it.
    public enum Kind: Sendable, Hashable {
        /// The text is not JSON, or its top level is not an object.
        case invalidJSON
        /// No message of that name exists in proto/.
        case unknownMessage
        /// A key names no field of the message (or names one field twice).
        case unknownField
        /// A value has the wrong JSON type or cannot be read as the field's type.
        case invalidValue
        /// An integer or float does not fit the field's type.
        case outOfRange
        /// The bytes are larger than `DecodingOptions.maxBytes`.
        case tooLarge
        /// The bytes break another limit of `DecodingOptions` (unknown fields, values of one
        /// field, nesting, memory).
        case overLimit
        /// protobuf-c does not accept the bytes as this message.
        case malformed
    }

    public let kind: Kind
    /// Where the problem is, "items[2].name"; empty for the message as a whole.
    public let path: String
    /// The whole human-readable explanation, naming the path:
    /// `field "value_in_dollars": expected an integer, got "abc"`.
    public let message: String

    public init(_ kind: Kind, path: String, message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    /// An error about a field's value: `field "<path>": <reason>`.
    static func field(_ kind: Kind, _ path: String, _ reason: String) -> ProtoJSONError {
        ProtoJSONError(kind, path: path, message: "field \"\(path)\": \(reason)")
    }

    public var description: String { message }
}
