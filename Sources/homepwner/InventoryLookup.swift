import Foundation
import Proto
import RPC
import Runtime

/// Finds a location or category the way people name it on the command line: a key, a path
/// ("Home/Kitchen", any case, spaces around "/" optional) or a name that only one has.
enum InventoryLookup {
    /// The key of the location `text` names; NOT_FOUND (exit 4) naming what exists, or
    /// INVALID_ARGUMENT when the name is ambiguous.
    static func location(_ text: String, client: RPCClient, timeout: UInt32) async throws -> Location {
        let locations = try await client.call(
            ItemServiceRPC.listLocations, ListLocationsRequest(), options: .init(timeoutMilliseconds: timeout)
        ).locations
        return try pick(text, from: locations)
    }

    /// The location in `locations` that `text` names (see `location`).
    static func pick(_ text: String, from locations: [Location]) throws -> Location {
        if let exact = locations.first(where: { $0.key == text.lowercased() }) { return exact }
        let wanted = normalizedPath(text)
        if let byPath = locations.first(where: { normalizedPath($0.path) == wanted }) { return byPath }
        let byName = locations.filter { $0.name.lowercased() == text.trimmingCharacters(in: .whitespaces).lowercased() }
        if byName.count == 1 { return byName[0] }
        if byName.count > 1 {
            throw RPCError(
                .invalidArgument,
                "\(byName.count) locations are named \"\(text)\": \(byName.map(\.path).joined(separator: ", ")); give the path or the key")
        }
        let known = locations.isEmpty ? "there are none yet; add one with 'homepwner location add NAME'" : "see 'homepwner location ls'"
        throw RPCError(.notFound, "no location named \"\(text)\"; \(known)")
    }

    /// The category `text` names (key or name, any case).
    static func category(_ text: String, client: RPCClient, timeout: UInt32) async throws -> Category {
        let categories = try await client.call(
            ItemServiceRPC.listCategories, ListCategoriesRequest(), options: .init(timeoutMilliseconds: timeout)
        ).categories
        if let match = categories.first(where: { $0.key == text.lowercased() || $0.name.lowercased() == text.lowercased() }) {
            return match
        }
        let known = categories.isEmpty ? "there are none yet; add one with 'homepwner category add NAME'" : "see 'homepwner category ls'"
        throw RPCError(.notFound, "no category named \"\(text)\"; \(known)")
    }

    private static func normalizedPath(_ text: String) -> String {
        text.split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.joined(separator: "/")
    }
}

/// The item flags for the claim fields, shared by `item add` and `item edit`.
enum ClaimFlags {
    static let options: [OptionSpec] = [
        OptionSpec(name: "location", help: "where it is: a location's path (Home/Kitchen), name or key; \"\" for none", valueName: "L"),
        OptionSpec(name: "quantity", help: "how many (a set of six chairs is one item of 6)", valueName: "N"),
        OptionSpec(name: "brand", help: "brand or manufacturer", valueName: "B"),
        OptionSpec(name: "model", help: "model", valueName: "M"),
        OptionSpec(name: "notes", help: "description and notes", valueName: "TEXT"),
        OptionSpec(name: "purchased", help: "purchase date", valueName: "YYYY-MM-DD"),
        OptionSpec(name: "price", help: "purchase price per unit, e.g. 129.99 or \"129.99 EUR\"", valueName: "AMOUNT"),
        OptionSpec(name: "bought-at", help: "where it was bought", valueName: "PLACE"),
        OptionSpec(name: "replacement", help: "what one costs new, e.g. 149 or \"149 GBP\"", valueName: "AMOUNT"),
        OptionSpec(name: "replacement-source", help: "where that figure comes from: a URL or words", valueName: "TEXT"),
        OptionSpec(name: "replacement-as-of", help: "when that figure was true", valueName: "YYYY-MM-DD"),
        OptionSpec(name: "warranty", help: "warranty expiry", valueName: "YYYY-MM-DD"),
        OptionSpec(name: "tag", help: "a tag (repeat for several; \"\" with edit clears them)", valueName: "TAG"),
        OptionSpec(name: "category", help: "coverage category: name or key; \"\" for none", valueName: "C"),
        OptionSpec(name: "field", help: "a custom field NAME=VALUE (repeat for several; with edit, replaces them all)", valueName: "NAME=VALUE"),
    ]

    /// The claim fields the flags set, into `request`, and their update_mask names; locations
    /// and categories are looked up by name through `client`.
    static func apply<Request: ClaimFieldsMessage>(
        _ options: ParsedOptions, to request: inout Request, client: RPCClient, timeout: UInt32
    ) async throws -> [String] {
        var mask: [String] = []
        if let text = options["location"] {
            request.locationKey = text.isEmpty ? "" : try await InventoryLookup.location(text, client: client, timeout: timeout).key
            mask.append("location_key")
        }
        if let text = options["category"] {
            request.categoryKey = text.isEmpty ? "" : try await InventoryLookup.category(text, client: client, timeout: timeout).key
            mask.append("category_key")
        }
        if options["quantity"] != nil {
            request.quantity = Int32(clamping: try options.int("quantity"))
            mask.append("quantity")
        }
        for (flag, field, keyPath) in [
            ("brand", "brand", \Request.brand), ("model", "model", \Request.model), ("notes", "notes", \Request.notes),
            ("purchased", "purchase_date", \Request.purchaseDate), ("bought-at", "purchase_place", \Request.purchasePlace),
            ("replacement-source", "replacement_source", \Request.replacementSource),
            ("replacement-as-of", "replacement_as_of", \Request.replacementAsOf), ("warranty", "warranty_expires", \Request.warrantyExpires),
        ] as [(String, String, WritableKeyPath<Request, String>)] {
            guard let text = options[flag] else { continue }
            request[keyPath: keyPath] = text
            mask.append(field)
        }
        if let text = options["price"] {
            request.purchasePrice = try money(text, flag: "--price")
            mask.append("purchase_price")
        }
        if let text = options["replacement"] {
            request.replacementValue = try money(text, flag: "--replacement")
            mask.append("replacement_value")
        }
        let tags = options.all("tag")
        if !tags.isEmpty {
            request.tags = tags.filter { !$0.isEmpty }
            mask.append("tags")
        }
        let fields = options.all("field")
        if !fields.isEmpty {
            request.customFields = try fields.filter { !$0.isEmpty }.map { text in
                guard let equals = text.firstIndex(of: "=") else {
                    throw OptionError.invalidValue(option: "--field", value: text, reason: "expected NAME=VALUE")
                }
                var field = CustomField()
                field.name = String(text[..<equals])
                field.value = String(text[text.index(after: equals)...])
                return field
            }
            mask.append("custom_fields")
        }
        return mask
    }

    /// "129.99", "129.99 EUR" or "EUR 129.99": an amount in the given currency or, without
    /// one, the policy's (sent as an empty currency, read as two decimals at most).
    static func money(_ text: String, flag: String) throws -> Money? {
        let words = text.split(separator: " ").map(String.init)
        guard !words.isEmpty else { return nil }
        var currency = ""
        var amount = words[0]
        if words.count == 2 {
            if words[0].count == 3 && Double(words[0]) == nil { (currency, amount) = (words[0].uppercased(), words[1]) } else {
                (amount, currency) = (words[0], words[1].uppercased())
            }
        } else if words.count > 2 {
            throw OptionError.invalidValue(option: flag, value: text, reason: "expected an amount and at most a currency, like \"129.99 EUR\"")
        }
        guard let money = Money.parse(amount, currency: currency.isEmpty ? "USD" : currency) else {
            throw OptionError.invalidValue(
                option: flag, value: text,
                reason: "expected an amount like 129.99 with at most \(Money.exponent(of: currency.isEmpty ? "USD" : currency)) decimals")
        }
        return Money(currency: currency, minorUnits: money.minorUnits)
    }
}
