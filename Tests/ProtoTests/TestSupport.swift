import Foundation
import Proto
import Testing


/// The generated Swift type of a message, by full proto name.
func generatedType(_ fullName: String) -> (any ProtoMessage.Type)? {
    ProtoCatalog.messageTypes.first { $0.protoName == fullName }
}

/// JSON text of a Foundation object tree.
func jsonText(_ object: Any) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

/// A Foundation object tree of JSON text.
func parseJSON(_ text: String) throws -> NSDictionary {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary)
}

/// Builds proto3 JSON with every field of a message set to a non-default value derived from its
/// descriptor, in canonical form (lowerCamel keys, 64-bit integers as strings, enums by name,
/// bytes as padded base64), so the decoder's output can be compared with it.
enum Fixture {
    static let bytes: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]

    static func object(_ message: String, depth: Int = 0, element: Int = 0) -> [String: Any] {
        guard let fields = ProtoRegistry.fields(of: message), depth < 6 else { return [:] }
        var object: [String: Any] = [:]
        for (index, field) in fields.enumerated() {
            if field.isRepeated {
                object[field.jsonName] = (0..<2).map { value(field, index: index, element: element + $0, depth: depth) }
            } else {
                object[field.jsonName] = value(field, index: index, element: element, depth: depth)
            }
        }
        return object
    }

    static func value(_ field: ProtoFieldInfo, index: Int, element: Int, depth: Int) -> Any {
        let second = (index + element) % 2 == 1
        switch field.type {
        case .string:
            return "Fluffy Bär 🧸 \"\(field.name)\"\t#\(element)"
        case .int32, .sint32, .sfixed32:
            return second ? -5 : 2_147_483_647
        case .int64, .sint64, .sfixed64:
            return second ? "-9223372036854775808" : "9223372036854775807"
        case .uint32, .fixed32:
            return 4_294_967_295
        case .uint64, .fixed64:
            return "18446744073709551615"
        case .float:
            return second ? -0.5 : 1.5
        case .double:
            return second ? -2.25 : 1e-300
        case .bool:
            return true
        case .enum:
            let declared: [ProtoEnumValueInfo] = ProtoRegistry.enumValues(of: field.typeName ?? "") ?? []
            let values = declared.filter { $0.number != 0 }
            return values.isEmpty ? "" : values[(index + element) % values.count].name
        case .bytes:
            return Data(bytes + [UInt8(truncatingIfNeeded: element)]).base64EncodedString()
        case .message:
            return object(field.typeName ?? "", depth: depth + 1, element: element)
        }
    }

    /// Every key of a decoded JSON object tree, nested ones included.
    static func keys(_ value: Any) -> Set<String> {
        var result: Set<String> = []
        if let object = value as? [String: Any] {
            for (key, nested) in object {
                result.insert(key)
                result.formUnion(keys(nested))
            }
        } else if let array = value as? [Any] {
            for nested in array { result.formUnion(keys(nested)) }
        }
        return result
    }

    /// Every field name the fixture of a message sets, nested messages included.
    static func expectedKeys(_ message: String, depth: Int = 0) -> Set<String> {
        guard let fields = ProtoRegistry.fields(of: message), depth < 6 else { return [] }
        var result: Set<String> = []
        for field in fields {
            result.insert(field.jsonName)
            if field.type == .message, let nested = field.typeName {
                result.formUnion(expectedKeys(nested, depth: depth + 1))
            }
        }
        return result
    }
}

extension Item {
    /// An item with every field set.
    static func sample(_ n: Int) -> Item {
        var item = Item()
        item.key = "00000000-0000-4000-8000-\(String(repeating: "0", count: 12 - String(n).count))\(n)"
        item.name = "Teddy #\(n) Bär 🧸"
        item.serialNumber = "SN-\(n)"
        item.valueInDollars = Int64(n) * 100
        item.createdAtMs = 1_700_000_000_000 + Int64(n)
        item.updatedAtMs = 1_700_000_000_500 + Int64(n)
        item.version = Int64(n % 7 + 1)
        item.photoKeys = ["photo-\(n)-a", "photo-\(n)-b"]
        item.primaryPhotoKey = "photo-\(n)-a"
        return item
    }
}
