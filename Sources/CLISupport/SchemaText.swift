import Proto

/// Messages described for people, in .proto syntax (`homepwner methods`, a request `homepwner
/// call` could not read).
public enum SchemaText {
    /// The message, then every message and enum it uses, each once. Nil for an unknown message.
    public static func describe(message fullName: String) -> String? {
        guard ProtoRegistry.hasMessage(fullName) else { return nil }
        var pending = [fullName.hasPrefix(".") ? String(fullName.dropFirst()) : fullName]
        var seenMessages: Set<String> = []
        var enums: [String] = []
        var seenEnums: Set<String> = []
        var blocks: [String] = []
        while !pending.isEmpty {
            let name = pending.removeFirst()
            guard seenMessages.insert(name).inserted, let fields = ProtoRegistry.fields(of: name) else { continue }
            blocks.append(block(name, fields))
            for f in fields {
                guard let typeName = f.typeName else { continue }
                if f.type == .message { pending.append(typeName) }
                if f.type == .enum, seenEnums.insert(typeName).inserted { enums.append(typeName) }
            }
        }
        for e in enums {
            let lines = (ProtoRegistry.enumValues(of: e) ?? []).map { "  \($0.name) = \($0.number);" }
            blocks.append("enum \(e) {\n\(lines.joined(separator: "\n"))\n}")
        }
        return blocks.joined(separator: "\n\n") + "\n"
    }

    private static func block(_ fullName: String, _ fields: [ProtoFieldInfo]) -> String {
        guard !fields.isEmpty else { return "message \(fullName) {}" }
        let declarations = fields.map { f in
            "  \(f.isRepeated ? "repeated " : "")\(f.typeName ?? f.type.rawValue) \(f.name) = \(f.number);"
        }
        let width = declarations.map(\.count).max() ?? 0
        var lines: [String] = []
        for (f, declaration) in zip(fields, declarations) {
            var notes: [String] = []
            if f.jsonName != f.name { notes.append("JSON \"\(f.jsonName)\"") }
            switch f.type {
            case .int64, .sint64, .sfixed64, .uint64, .fixed64:
                notes.append("number or decimal string")
            case .bytes:
                notes.append("base64")
            case .enum:
                notes.append("value name or number")
            default:
                break
            }
            if notes.isEmpty {
                lines.append(declaration)
            } else {
                let pad = String(repeating: " ", count: width - declaration.count)
                lines.append("\(declaration)\(pad)  // \(notes.joined(separator: "; "))")
            }
        }
        return "message \(fullName) {\n\(lines.joined(separator: "\n"))\n}"
    }
}
