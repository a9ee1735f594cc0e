import CProtobufC
import Foundation

extension ProtoJSON {
    /// Converts proto3 JSON (a JSON object; empty text = the empty message) into the protobuf wire
    /// format of `messageName` ("homepwner.v1.CreateItemRequest"), then has protobuf-c unpack the
    /// result to prove it is acceptable.
    ///
    /// Keys are proto names ("value_in_dollars") or JSON names ("valueInDollars"); `null` means the
    /// default. 64-bit integers may be numbers or decimal strings, enums names or numbers, bytes
    /// standard or URL-safe base64. Errors name the field path and what was wrong.
    public static func encode(json: String, as messageName: String) throws(ProtoJSONError) -> [UInt8] {
        let schema = try schema(messageName)
        let object: [String: Any]
        if json.trimmingSpaces().isEmpty {
            object = [:]
        } else {
            object = try parseObject(json, for: schema)
        }
        var writer = ProtoWireWriter()
        try JSONToWire.message(object, schema, path: "", into: &writer)
        guard let unpacked = schema.unpack(writer.bytes) else {
            throw ProtoJSONError(
                .malformed, path: "",
                message: "protobuf-c rejected the \(writer.bytes.count) bytes written for \(schema.fullName)")
        }
        protobuf_c_message_free_unpacked(unpacked, nil)
        return writer.bytes
    }

    /// The schema of a message, or an error naming the unknown message.
    static func schema(_ messageName: String) throws(ProtoJSONError) -> MessageSchema {
        guard let d = ProtoRegistry.messageDescriptor(messageName) else {
            throw ProtoJSONError(.unknownMessage, path: "", message: "unknown message type \"\(messageName)\"")
        }
        return MessageSchema(descriptor: d)
    }

    private static func parseObject(_ json: String, for schema: MessageSchema) throws(ProtoJSONError) -> [String: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        } catch {
            let ns = error as NSError
            let reason = (ns.userInfo["NSDebugDescription"] as? String) ?? ns.localizedDescription
            throw ProtoJSONError(.invalidJSON, path: "", message: "invalid JSON: \(reason)")
        }
        guard let object = parsed as? [String: Any] else {
            throw ProtoJSONError(
                .invalidJSON, path: "",
                message: "expected a JSON object for \(schema.fullName), got \(JSONValues.describe(parsed))")
        }
        return object
    }
}

/// Writes a JSONSerialization object tree as wire format, field by field in field-number order
/// (the order protobuf-c packs in, so the bytes match what protobuf-c would produce).
enum JSONToWire {
    static func message(
        _ object: [String: Any], _ schema: MessageSchema, path: String, into w: inout ProtoWireWriter
    ) throws(ProtoJSONError) {
        let fields = schema.fields
        var given: [UInt32: (key: String, value: Any)] = [:]
        for key in object.keys.sorted() {
            guard let f = schema.field(named: key) else {
                let full = join(path, key)
                let names = fields.isEmpty ? "it has no fields" : "fields: " + fields.map(\.name).joined(separator: ", ")
                throw ProtoJSONError(
                    .unknownField, path: full,
                    message: "unknown field \"\(full)\" in \(schema.fullName) (\(names))")
            }
            if let earlier = given[f.number] {
                throw .field(
                    .unknownField, join(path, f.name),
                    "given twice, as \"\(earlier.key)\" and as \"\(key)\"")
            }
            given[f.number] = (key, object[key]!)
        }
        for f in fields {
            guard let (_, value) = given[f.number] else { continue }
            try field(f, value, path: join(path, f.name), into: &w)
        }
    }

    private static func field(_ f: FieldSchema, _ value: Any, path: String, into w: inout ProtoWireWriter) throws(ProtoJSONError) {
        if value is NSNull { return }
        guard f.isRepeated else {
            // proto3 fields without presence are not written when default, as protobuf-c does.
            try single(f, value, path: path, always: f.hasPresenceFlag || f.label == PROTOBUF_C_LABEL_REQUIRED, into: &w)
            return
        }
        guard let array = value as? [Any] else {
            throw .field(.invalidValue, path, "expected an array, got \(JSONValues.describe(value))")
        }
        guard !array.isEmpty else { return }
        if f.isPacked, f.type != PROTOBUF_C_TYPE_STRING, f.type != PROTOBUF_C_TYPE_BYTES, f.type != PROTOBUF_C_TYPE_MESSAGE {
            var packed = ProtoWireWriter()
            for (i, element) in array.enumerated() {
                let p = "\(path)[\(i)]"
                try notNull(f, element, path: p)
                write(try scalar(f, element, path: p).wire, into: &packed)
            }
            w.field(f.number, lengthDelimited: packed.bytes)
        } else {
            for (i, element) in array.enumerated() {
                let p = "\(path)[\(i)]"
                try notNull(f, element, path: p)
                try single(f, element, path: p, always: true, into: &w)
            }
        }
    }

    private static func notNull(_ f: FieldSchema, _ element: Any, path: String) throws(ProtoJSONError) {
        if element is NSNull {
            throw .field(.invalidValue, path, "expected \(f.typeName), got null (repeated fields cannot hold null)")
        }
    }

    /// One value with its tag; `always` = write even the default value.
    private static func single(
        _ f: FieldSchema, _ value: Any, path: String, always: Bool, into w: inout ProtoWireWriter
    ) throws(ProtoJSONError) {
        switch f.type {
        case PROTOBUF_C_TYPE_MESSAGE:
            guard let object = value as? [String: Any], let nested = f.message else {
                throw .field(.invalidValue, path, "expected an object for \(f.typeName), got \(JSONValues.describe(value))")
            }
            var inner = ProtoWireWriter()
            try message(object, nested, path: path, into: &inner)
            w.field(f.number, lengthDelimited: inner.bytes)
        case PROTOBUF_C_TYPE_STRING:
            let s = try JSONValues.string(value, path: path)
            if s.isEmpty && !always { return }
            w.field(f.number, lengthDelimited: Array(s.utf8))
        case PROTOBUF_C_TYPE_BYTES:
            let b = try JSONValues.bytes(value, path: path)
            if b.isEmpty && !always { return }
            w.field(f.number, lengthDelimited: b)
        default:
            let (wire, isDefault) = try scalar(f, value, path: path)
            if isDefault && !always { return }
            switch wire {
            case .varint: w.tag(f.number, .varint)
            case .fixed32: w.tag(f.number, .fixed32)
            case .fixed64: w.tag(f.number, .fixed64)
            }
            write(wire, into: &w)
        }
    }

    /// A numeric, bool or enum value's wire form.
    enum Wire {
        case varint(UInt64)
        case fixed32(UInt32)
        case fixed64(UInt64)
    }

    private static func write(_ wire: Wire, into w: inout ProtoWireWriter) {
        switch wire {
        case let .varint(v): w.varint(v)
        case let .fixed32(v): w.fixed32(v)
        case let .fixed64(v): w.fixed64(v)
        }
    }

    private static func scalar(_ f: FieldSchema, _ value: Any, path: String) throws(ProtoJSONError) -> (wire: Wire, isDefault: Bool) {
        let type = f.typeName
        func signed(_ bits: Int) throws(ProtoJSONError) -> Int64 {
            let (min, max) = bits == 32 ? (Int64(Int32.min), Int64(Int32.max)) : (Int64.min, Int64.max)
            return try JSONValues.signed(value, path: path, type: type, min: min, max: max)
        }
        func unsigned(_ bits: Int) throws(ProtoJSONError) -> UInt64 {
            try JSONValues.unsigned(value, path: path, type: type, max: bits == 32 ? UInt64(UInt32.max) : .max)
        }
        switch f.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_INT64:
            // Negative int32 values are sign-extended to 64 bits: ten bytes on the wire.
            let v = try signed(f.type == PROTOBUF_C_TYPE_INT32 ? 32 : 64)
            return (.varint(UInt64(bitPattern: v)), v == 0)
        case PROTOBUF_C_TYPE_SINT32:
            let v = Int32(try signed(32))
            return (.varint(ProtoWireWriter.zigZag32(v)), v == 0)
        case PROTOBUF_C_TYPE_SINT64:
            let v = try signed(64)
            return (.varint(ProtoWireWriter.zigZag64(v)), v == 0)
        case PROTOBUF_C_TYPE_SFIXED32:
            let v = Int32(try signed(32))
            return (.fixed32(UInt32(bitPattern: v)), v == 0)
        case PROTOBUF_C_TYPE_SFIXED64:
            let v = try signed(64)
            return (.fixed64(UInt64(bitPattern: v)), v == 0)
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_UINT64:
            let v = try unsigned(f.type == PROTOBUF_C_TYPE_UINT32 ? 32 : 64)
            return (.varint(v), v == 0)
        case PROTOBUF_C_TYPE_FIXED32:
            let v = UInt32(try unsigned(32))
            return (.fixed32(v), v == 0)
        case PROTOBUF_C_TYPE_FIXED64:
            let v = try unsigned(64)
            return (.fixed64(v), v == 0)
        case PROTOBUF_C_TYPE_FLOAT:
            let v = Float(try JSONValues.floatingPoint(value, path: path, isFloat: true))
            return (.fixed32(v.bitPattern), v == 0)
        case PROTOBUF_C_TYPE_DOUBLE:
            let v = try JSONValues.floatingPoint(value, path: path, isFloat: false)
            return (.fixed64(v.bitPattern), v == 0)
        case PROTOBUF_C_TYPE_BOOL:
            let v = try JSONValues.bool(value, path: path)
            return (.varint(v ? 1 : 0), !v)
        case PROTOBUF_C_TYPE_ENUM:
            guard let e = f.enumeration else { break }
            let v = try JSONValues.enumNumber(value, e, path: path)
            return (.varint(UInt64(bitPattern: Int64(v))), v == 0)
        default:
            break
        }
        throw .field(.invalidValue, path, "unsupported field type \(type)")
    }

    static func join(_ path: String, _ name: String) -> String {
        path.isEmpty ? name : "\(path).\(name)"
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
