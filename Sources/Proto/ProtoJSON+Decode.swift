import CProtobufC

extension ProtoJSON {
    /// Unpacks wire bytes of `messageName` with protobuf-c and prints them as proto3 JSON:
    /// lowerCamel keys (or proto names) in field-number order, 64-bit integers as strings, enums by
    /// name (number when unknown to this build), bytes as base64, absent messages as null.
    /// Bytes over `options.limits.maxBytes`, or breaking its other limits, are refused before
    /// protobuf-c sees them.
    public static func decode(
        _ bytes: [UInt8], as messageName: String, options: JSONOptions = .init()
    ) throws(ProtoJSONError) -> String {
        let schema = try schema(messageName)
        guard bytes.count <= options.limits.maxBytes else {
            throw ProtoJSONError(
                .tooLarge, path: "",
                message: "\(schema.fullName) is \(bytes.count) bytes, over the limit of \(options.limits.maxBytes) bytes")
        }
        let scanned = bytes.withUnsafeBytes { input in
            Result { () throws(ProtoDecodingError) in try WireScan.check(input, as: schema.descriptor, options: options.limits) }
        }
        if case .failure(let error) = scanned {
            // Text with a NUL does not parse as the message's strings; the rest breaks a limit.
            if case .nulInText = error { throw ProtoJSONError(.malformed, path: "", message: error.description) }
            throw ProtoJSONError(.overLimit, path: "", message: error.description)
        }
        guard let unpacked = schema.unpack(bytes) else {
            throw ProtoJSONError(.malformed, path: "", message: "\(bytes.count) bytes do not parse as \(schema.fullName)")
        }
        defer { protobuf_c_message_free_unpacked(unpacked, nil) }
        let printer = CStructPrinter(options: options, text: JSONText(pretty: options.prettyPrinted))
        return printer.message(UnsafeRawPointer(unpacked), schema, level: 0)
    }
}

/// Prints a message protobuf-c unpacked by walking its C struct with the field descriptors:
/// a field's value is at `offset`; a repeated field's count (`size_t n_<field>`) is at
/// `quantifier_offset` and a pointer to its array at `offset`.
struct CStructPrinter {
    let options: ProtoJSON.JSONOptions
    let text: JSONText

    func message(_ base: UnsafeRawPointer, _ schema: MessageSchema, level: Int) -> String {
        var members: [(key: String, value: String)] = []
        for f in schema.fields {
            let key = options.useProtoNames ? f.name : f.jsonName
            if f.isRepeated {
                let count = base.load(fromByteOffset: f.quantifierOffset, as: Int.self)
                guard count > 0, let array = base.load(fromByteOffset: f.offset, as: UnsafeRawPointer?.self) else {
                    if options.emitDefaults { members.append((key, "[]")) }
                    continue
                }
                let stride = Self.elementStride(f)
                let values = (0..<count).map { element(f, array + $0 * stride, level: level + 2) }
                members.append((key, text.array(values, level: level + 1)))
            } else if f.type == PROTOBUF_C_TYPE_MESSAGE {
                if let nested = base.load(fromByteOffset: f.offset, as: UnsafeRawPointer?.self), let schema = f.message {
                    members.append((key, message(nested, schema, level: level + 1)))
                } else if options.emitDefaults {
                    members.append((key, "null"))
                }
            } else {
                let value = base + f.offset
                let present =
                    f.hasPresenceFlag
                    ? base.load(fromByteOffset: f.quantifierOffset, as: protobuf_c_boolean.self) != 0
                    : !Self.isDefault(f, value)
                if present || options.emitDefaults {
                    members.append((key, element(f, value, level: level + 1)))
                }
            }
        }
        return text.object(members, level: level)
    }

    /// One value; `p` points at it (for messages: at the pointer to it).
    private func element(_ f: FieldSchema, _ p: UnsafeRawPointer, level: Int) -> String {
        switch f.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            return String(p.load(as: Int32.self))
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            return String(p.load(as: UInt32.self))
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            // proto3 JSON prints 64-bit integers as strings: JavaScript numbers lose precision past 2^53.
            return "\"\(p.load(as: Int64.self))\""
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            return "\"\(p.load(as: UInt64.self))\""
        case PROTOBUF_C_TYPE_FLOAT:
            return JSONText.number(p.load(as: Float.self))
        case PROTOBUF_C_TYPE_DOUBLE:
            return JSONText.number(p.load(as: Double.self))
        case PROTOBUF_C_TYPE_BOOL:
            return p.load(as: protobuf_c_boolean.self) != 0 ? "true" : "false"
        case PROTOBUF_C_TYPE_ENUM:
            let number = p.load(as: Int32.self)
            if let name = f.enumeration?.name(of: number) { return JSONText.quote(name) }
            return String(number)
        case PROTOBUF_C_TYPE_STRING:
            // protobuf-c strings are NUL-terminated; String(cString:) repairs invalid UTF-8 with U+FFFD.
            guard let c = p.load(as: UnsafePointer<CChar>?.self) else { return "\"\"" }
            return JSONText.quote(String(cString: c))
        case PROTOBUF_C_TYPE_BYTES:
            let b = p.load(as: ProtobufCBinaryData.self)
            guard b.len > 0, let data = b.data else { return "\"\"" }
            return "\"" + ProtoBase64.encode(UnsafeBufferPointer(start: data, count: b.len)) + "\""
        case PROTOBUF_C_TYPE_MESSAGE:
            guard let nested = p.load(as: UnsafeRawPointer?.self), let schema = f.message else { return "null" }
            return message(nested, schema, level: level)
        default:
            return "null"
        }
    }

    /// Whether a proto3 scalar holds its default (zero, false, empty), which protobuf-c does not pack.
    private static func isDefault(_ f: FieldSchema, _ p: UnsafeRawPointer) -> Bool {
        switch f.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_UINT32,
             PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_ENUM, PROTOBUF_C_TYPE_BOOL:
            return p.load(as: UInt32.self) == 0
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
             PROTOBUF_C_TYPE_FIXED64:
            return p.load(as: UInt64.self) == 0
        case PROTOBUF_C_TYPE_FLOAT:
            return p.load(as: Float.self) == 0
        case PROTOBUF_C_TYPE_DOUBLE:
            return p.load(as: Double.self) == 0
        case PROTOBUF_C_TYPE_STRING:
            guard let c = p.load(as: UnsafePointer<CChar>?.self) else { return true }
            return c.pointee == 0
        case PROTOBUF_C_TYPE_BYTES:
            return p.load(as: ProtobufCBinaryData.self).len == 0
        default:
            return false
        }
    }

    /// Size of one element of a repeated field's C array.
    private static func elementStride(_ f: FieldSchema) -> Int {
        switch f.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32, PROTOBUF_C_TYPE_UINT32,
             PROTOBUF_C_TYPE_FIXED32, PROTOBUF_C_TYPE_FLOAT, PROTOBUF_C_TYPE_ENUM:
            return 4
        case PROTOBUF_C_TYPE_BOOL:
            return MemoryLayout<protobuf_c_boolean>.stride
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
             PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE:
            return 8
        case PROTOBUF_C_TYPE_BYTES:
            return MemoryLayout<ProtobufCBinaryData>.stride
        default:
            // string (char *) and message (ProtobufCMessage *) arrays hold pointers.
            return MemoryLayout<UnsafeRawPointer>.stride
        }
    }
}
