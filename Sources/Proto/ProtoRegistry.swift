import CProtobufC
import HomepwnerProtoC

/// A method of a proto service as protoc-c describes it.
public struct MethodDescriptorInfo: Sendable, Hashable, CustomStringConvertible {
    /// "/homepwner.v1.ItemService/CreateItem".
    public let path: String
    /// "homepwner.v1.ItemService".
    public let service: String
    /// "CreateItem".
    public let name: String
    /// Full proto name of the request message, "homepwner.v1.CreateItemRequest".
    public let requestType: String
    /// Full proto name of the response message, "homepwner.v1.Item".
    public let responseType: String

    public init(service: String, name: String, requestType: String, responseType: String) {
        self.path = "/\(service)/\(name)"
        self.service = service
        self.name = name
        self.requestType = requestType
        self.responseType = responseType
    }

    public var description: String { "\(path)(\(requestType)) returns (\(responseType))" }
}

/// The type of a field, as written in a .proto file.
public enum ProtoFieldType: String, Sendable, Hashable, CaseIterable {
    case int32, sint32, sfixed32, int64, sint64, sfixed64
    case uint32, fixed32, uint64, fixed64
    case float, double, bool, string, bytes
    case `enum`, message
}

/// One field of a message as protoc-c describes it.
public struct ProtoFieldInfo: Sendable, Hashable {
    /// The proto name, "value_in_dollars".
    public let name: String
    /// The proto3 JSON name, "valueInDollars".
    public let jsonName: String
    /// The field number.
    public let number: Int
    public let type: ProtoFieldType
    public let isRepeated: Bool
    /// Full proto name of the message or enum type; nil for scalars.
    public let typeName: String?
}

/// One value of a proto enum.
public struct ProtoEnumValueInfo: Sendable, Hashable {
    /// "ORIGINAL".
    public let name: String
    public let number: Int32
}

/// Runtime lookup over every descriptor protoc-c generated for proto/.
public enum ProtoRegistry {
    /// The method of an exact path, "/homepwner.v1.ItemService/CreateItem"; nil for any other.
    public static func method(path: String) -> MethodDescriptorInfo? {
        methodsByPath[path]
    }

    /// Every method of every service, in .proto order.
    public static let allMethods: [MethodDescriptorInfo] = {
        var result: [MethodDescriptorInfo] = []
        for i in 0..<hp_service_count() {
            guard let d = hp_service_at(i)?.pointee.descriptor?.pointee else { continue }
            let service = String(cString: d.name)
            for j in 0..<Int(d.n_methods) {
                let m = d.methods[j]
                result.append(MethodDescriptorInfo(
                    service: service, name: String(cString: m.name),
                    requestType: String(cString: m.input.pointee.name),
                    responseType: String(cString: m.output.pointee.name)))
            }
        }
        return result
    }()

    private static let methodsByPath = Dictionary(uniqueKeysWithValues: allMethods.map { ($0.path, $0) })

    /// Full names of every message, in .proto order.
    public static var messageNames: [String] { messageIndex.names }

    /// Full names of every enum (nested ones included), in .proto order.
    public static var enumNames: [String] { enumIndex.names }

    /// Whether a message of this full name ("homepwner.v1.Item") exists.
    public static func hasMessage(_ fullName: String) -> Bool {
        messageDescriptor(fullName) != nil
    }

    /// The fields of a message in field-number order; nil for an unknown message.
    public static func fields(of message: String) -> [ProtoFieldInfo]? {
        guard let d = messageDescriptor(message) else { return nil }
        return MessageSchema(descriptor: d).fields.map { f in
            ProtoFieldInfo(
                name: f.name, jsonName: f.jsonName, number: Int(f.number),
                type: ProtoFieldType(rawValue: ProtoNames.keyword(f.type)) ?? .bytes,
                isRepeated: f.isRepeated,
                typeName: f.message?.fullName ?? f.enumeration?.fullName)
        }
    }

    /// The declared values of an enum by number; nil for an unknown enum.
    public static func enumValues(of enumName: String) -> [ProtoEnumValueInfo]? {
        guard let d = enumDescriptor(enumName) else { return nil }
        return EnumSchema(descriptor: d).values.map { ProtoEnumValueInfo(name: $0.name, number: $0.number) }
    }

    // MARK: Descriptors (internal)

    /// The protobuf-c descriptor of a message by full name (a leading "." is ignored).
    static func messageDescriptor(_ fullName: String) -> UnsafePointer<ProtobufCMessageDescriptor>? {
        guard let i = messageIndex.positions[normalized(fullName)] else { return nil }
        return hp_message_at(i)?.pointee.descriptor
    }

    /// The protobuf-c descriptor of an enum by full name (a leading "." is ignored).
    static func enumDescriptor(_ fullName: String) -> UnsafePointer<ProtobufCEnumDescriptor>? {
        guard let i = enumIndex.positions[normalized(fullName)] else { return nil }
        return hp_enum_at(i)?.pointee.descriptor
    }

    private static func normalized(_ name: String) -> String {
        name.hasPrefix(".") ? String(name.dropFirst()) : name
    }

    /// Names in registry order and their registry positions.
    private struct Index: Sendable {
        var names: [String] = []
        var positions: [String: Int] = [:]

        init(count: Int, name: (Int) -> String?) {
            for i in 0..<count {
                guard let n = name(i) else { continue }
                names.append(n)
                positions[n] = i
            }
        }
    }

    private static let messageIndex = Index(count: hp_message_count()) { i in
        hp_message_at(i)?.pointee.descriptor.map { String(cString: $0.pointee.name) }
    }

    private static let enumIndex = Index(count: hp_enum_count()) { i in
        hp_enum_at(i)?.pointee.descriptor.map { String(cString: $0.pointee.name) }
    }
}
