import CProtobufC
import HomepwnerProtoC

// Read-only views of protobuf-c's runtime descriptors, shared by ProtoRegistry and ProtoJSON.
// The descriptors are static C data that lives as long as the process, so the pointers never dangle.

/// One message descriptor of the protoc-c registry.
struct MessageSchema {
    let descriptor: UnsafePointer<ProtobufCMessageDescriptor>

    /// "homepwner.v1.Item".
    var fullName: String { String(cString: descriptor.pointee.name) }

    /// Size of the C struct protobuf-c unpacks into.
    var cSize: Int { descriptor.pointee.sizeof_message }

    /// Every field in field-number order (the order protobuf-c packs and JSON prints them).
    var fields: [FieldSchema] {
        let d = descriptor.pointee
        guard d.n_fields > 0, let fields = d.fields else { return [] }
        return (0..<Int(d.n_fields)).map { FieldSchema(descriptor: fields + $0) }.sorted { $0.number < $1.number }
    }

    /// The field with this proto name ("value_in_dollars") or JSON name ("valueInDollars").
    func field(named key: String) -> FieldSchema? {
        if let f = protobuf_c_message_descriptor_get_field_by_name(descriptor, key) {
            return FieldSchema(descriptor: f)
        }
        return fields.first { $0.jsonName == key }
    }
}

/// One field descriptor.
struct FieldSchema {
    let descriptor: UnsafePointer<ProtobufCFieldDescriptor>

    /// The proto name, "value_in_dollars".
    var name: String { String(cString: descriptor.pointee.name) }
    /// The proto3 JSON name, "valueInDollars".
    var jsonName: String { ProtoNames.jsonName(name) }
    var number: UInt32 { descriptor.pointee.id }
    var type: ProtobufCType { descriptor.pointee.type }
    var label: ProtobufCLabel { descriptor.pointee.label }
    var isRepeated: Bool { label == PROTOBUF_C_LABEL_REPEATED }
    var isPacked: Bool { descriptor.pointee.flags & UInt32(PROTOBUF_C_FIELD_FLAG_PACKED.rawValue) != 0 }
    /// Byte offset of the value (or of the array pointer) in the C struct.
    var offset: Int { Int(descriptor.pointee.offset) }
    /// Byte offset of `n_<field>` (repeated) or `has_<field>` (proto2 / proto3 optional scalars).
    var quantifierOffset: Int { Int(descriptor.pointee.quantifier_offset) }

    /// True when presence is tracked by a `has_` flag rather than by a non-default value.
    var hasPresenceFlag: Bool {
        (label == PROTOBUF_C_LABEL_OPTIONAL || label == PROTOBUF_C_LABEL_REQUIRED)
            && type != PROTOBUF_C_TYPE_MESSAGE && type != PROTOBUF_C_TYPE_STRING
    }

    var message: MessageSchema? {
        guard type == PROTOBUF_C_TYPE_MESSAGE, let d = descriptor.pointee.descriptor else { return nil }
        return MessageSchema(descriptor: d.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
    }

    var enumeration: EnumSchema? {
        guard type == PROTOBUF_C_TYPE_ENUM, let d = descriptor.pointee.descriptor else { return nil }
        return EnumSchema(descriptor: d.assumingMemoryBound(to: ProtobufCEnumDescriptor.self))
    }

    /// The proto keyword or full type name: "int64", "homepwner.v1.Item".
    var typeName: String {
        if let message { return message.fullName }
        if let enumeration { return enumeration.fullName }
        return ProtoNames.keyword(type)
    }
}

/// One enum descriptor.
struct EnumSchema {
    let descriptor: UnsafePointer<ProtobufCEnumDescriptor>

    var fullName: String { String(cString: descriptor.pointee.name) }

    /// Every declared value, by number.
    var values: [(name: String, number: Int32)] {
        let d = descriptor.pointee
        guard d.n_values > 0, let values = d.values else { return [] }
        return (0..<Int(d.n_values)).map { (String(cString: values[$0].name), Int32(values[$0].value)) }
    }

    /// The value name for a number, or nil when this build does not know it.
    func name(of number: Int32) -> String? {
        protobuf_c_enum_descriptor_get_value(descriptor, CInt(number)).map { String(cString: $0.pointee.name) }
    }

    /// The number of a value name ("ORIGINAL").
    func number(named name: String) -> Int32? {
        protobuf_c_enum_descriptor_get_value_by_name(descriptor, name).map { Int32($0.pointee.value) }
    }
}

/// Naming rules of protoc and the proto language.
enum ProtoNames {
    /// protoc's ToJsonName: "value_in_dollars" → "valueInDollars".
    static func jsonName(_ protoName: String) -> String {
        var out = ""
        var upperNext = false
        for ch in protoName {
            if ch == "_" {
                upperNext = true
            } else if upperNext {
                out += ch.uppercased()
                upperNext = false
            } else {
                out.append(ch)
            }
        }
        return out
    }

    /// The .proto keyword of a scalar type.
    static func keyword(_ type: ProtobufCType) -> String {
        switch type {
        case PROTOBUF_C_TYPE_INT32: "int32"
        case PROTOBUF_C_TYPE_SINT32: "sint32"
        case PROTOBUF_C_TYPE_SFIXED32: "sfixed32"
        case PROTOBUF_C_TYPE_INT64: "int64"
        case PROTOBUF_C_TYPE_SINT64: "sint64"
        case PROTOBUF_C_TYPE_SFIXED64: "sfixed64"
        case PROTOBUF_C_TYPE_UINT32: "uint32"
        case PROTOBUF_C_TYPE_FIXED32: "fixed32"
        case PROTOBUF_C_TYPE_UINT64: "uint64"
        case PROTOBUF_C_TYPE_FIXED64: "fixed64"
        case PROTOBUF_C_TYPE_FLOAT: "float"
        case PROTOBUF_C_TYPE_DOUBLE: "double"
        case PROTOBUF_C_TYPE_BOOL: "bool"
        case PROTOBUF_C_TYPE_ENUM: "enum"
        case PROTOBUF_C_TYPE_STRING: "string"
        case PROTOBUF_C_TYPE_BYTES: "bytes"
        case PROTOBUF_C_TYPE_MESSAGE: "message"
        default: "unknown(\(type.rawValue))"
        }
    }
}

extension MessageSchema {
    /// Unpacks with protobuf-c's default allocator; nil when protobuf-c rejects the bytes.
    /// The caller must pass the result to `protobuf_c_message_free_unpacked(_, nil)`.
    /// protobuf-c copies strings and bytes out of the input, so the result does not borrow `bytes`.
    func unpack(_ bytes: [UInt8]) -> UnsafeMutablePointer<ProtobufCMessage>? {
        bytes.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress, buffer.count > 0 {
                return protobuf_c_message_unpack(descriptor, nil, buffer.count, base)
            }
            // protobuf-c wants a valid pointer even for zero bytes.
            var empty: UInt8 = 0
            return protobuf_c_message_unpack(descriptor, nil, 0, &empty)
        }
    }
}
