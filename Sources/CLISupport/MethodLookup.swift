import Foundation
import Proto

/// The method a person names on the command line, in any of the spellings people use.
public enum MethodLookup {
    /// The method for a name. Accepted forms: "/homepwner.v1.ItemService/CreateItem",
    /// "homepwner.v1.ItemService/CreateItem", "ItemService/CreateItem", "homepwner.v1.ItemService.CreateItem",
    /// "ItemService.CreateItem", and a bare "CreateItem" when only one service has that method.
    /// Exact spelling wins; otherwise a unique case-insensitive match is accepted.
    public static func method(named spelling: String) -> MethodDescriptorInfo? {
        var text = Substring(spelling.trimmingCharacters(in: .whitespacesAndNewlines))
        while text.hasPrefix("/") { text = text.dropFirst() }
        guard !text.isEmpty else { return nil }
        let service: Substring?
        let name: Substring
        if let slash = text.lastIndex(of: "/") {
            service = text[..<slash]
            name = text[text.index(after: slash)...]
        } else if let dot = text.lastIndex(of: ".") {
            service = text[..<dot]
            name = text[text.index(after: dot)...]
        } else {
            service = nil
            name = text
        }
        func matches(_ m: MethodDescriptorInfo, caseInsensitive: Bool) -> Bool {
            func same(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
                caseInsensitive ? a.lowercased() == b.lowercased() : a == b
            }
            guard same(m.name, name) else { return false }
            guard let service else { return true }
            let short = m.service.split(separator: ".").last.map(String.init) ?? m.service
            return same(m.service, service) || same(short, service)
        }
        for caseInsensitive in [false, true] {
            let found = ProtoRegistry.allMethods.filter { matches($0, caseInsensitive: caseInsensitive) }
            if found.count == 1 { return found[0] }
            if found.count > 1 { return nil }
        }
        return nil
    }

    /// Paths of the methods whose path contains the name's last part, any case, for a
    /// "did you mean" after `method(named:)` found none.
    public static func suggestions(for spelling: String) -> [String] {
        let last = spelling.split(separator: "/").last.map { $0.lowercased() } ?? ""
        return ProtoRegistry.allMethods.map(\.path).filter { $0.lowercased().contains(last) }
    }
}
