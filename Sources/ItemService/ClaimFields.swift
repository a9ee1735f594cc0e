import Proto
import SQLite

/// What an item has of the evidence a claim asks for, as bits in `items.evidence` (so
/// ListItems' `missing` and GetReadiness are one scan of one column).
public struct ItemEvidence: OptionSet, Sendable {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// The bit of one kind of evidence (`Evidence` 1…5).
    public init(_ evidence: Evidence) { rawValue = evidence.rawValue > 0 ? 1 << Int64(evidence.rawValue - 1) : 0 }

    /// Every kind, in `Evidence` order.
    public static let kinds: [Evidence] = [.photo, .receipt, .serial, .value, .purchaseDate]

    /// What `item` has: a picture of it (any role but receipt and manual), a receipt, a serial
    /// (or a photo of its plate), a value, a purchase date.
    public static func of(_ item: Item) -> ItemEvidence {
        var have: ItemEvidence = []
        let roles = Set(item.photos.map(\.role))
        if !roles.isDisjoint(with: [.photo, .serialPlate, .damage, .other]) { have.insert(ItemEvidence(.photo)) }
        if roles.contains(.receipt) { have.insert(ItemEvidence(.receipt)) }
        if !item.serialNumber.isEmpty || roles.contains(.serialPlate) { have.insert(ItemEvidence(.serial)) }
        if (item.replacementValue?.minorUnits ?? 0) > 0 || (item.purchasePrice?.minorUnits ?? 0) > 0 || item.valueInDollars > 0 {
            have.insert(ItemEvidence(.value))
        }
        if !item.purchaseDate.isEmpty { have.insert(ItemEvidence(.purchaseDate)) }
        return have
    }

    /// The kinds `self` lacks, in `Evidence` order.
    public var missing: [Evidence] { Self.kinds.filter { !contains(ItemEvidence($0)) } }
}

/// The claim fields' columns in `items`, and how a row's and a request's values map to them.
enum ClaimColumns {
    /// Selected after the original columns (`ItemStore.columns`), from index `first`.
    static let selected =
        "location_key, quantity, brand, model, notes, purchase_date, purchase_currency, purchase_minor, purchase_place, "
        + "replacement_currency, replacement_minor, replacement_source, replacement_as_of, warranty_expires, tags, "
        + "category_key, custom_fields, photo_roles, evidence"
    static let first = 11

    /// The fields' names as update_mask and CreateItem know them, in items.proto order.
    static let names = [
        "location_key", "quantity", "brand", "model", "notes", "purchase_date", "purchase_price", "purchase_place",
        "replacement_value", "replacement_source", "replacement_as_of", "warranty_expires", "tags", "category_key",
        "custom_fields",
    ]

    /// A mask entry's field name (snake case; the JSON mapping's lowerCamelCase is accepted too).
    static func name(_ entry: String) -> String? {
        if names.contains(entry) { return entry }
        var snake = ""
        for character in entry {
            if character.isUppercase { snake += "_" + character.lowercased() } else { snake.append(character) }
        }
        return names.contains(snake) ? snake : nil
    }

    /// The columns and checked values for the named fields of `source`. Store-dependent checks
    /// (that the location and category exist) are the caller's.
    static func assignments(_ source: some ClaimFieldsMessage, names: [String]) throws(ItemStoreError) -> [(String, SQLiteValue)] {
        var out: [(String, SQLiteValue)] = []
        for name in names {
            switch name {
            case "location_key": out.append(("location_key", .text(try ClaimInput.optionalKey(source.locationKey, field: name))))
            case "quantity": out.append(("quantity", .integer(Int64(try ClaimInput.quantity(source.quantity)))))
            case "brand", "model", "purchase_place":
                let value = name == "brand" ? source.brand : name == "model" ? source.model : source.purchasePlace
                out.append((name, .text(try ClaimInput.text(value, field: name))))
            case "notes":
                out.append(("notes", .text(try ClaimInput.text(source.notes, field: name, limit: ClaimInput.maxNotesLength, multiline: true))))
            case "replacement_source":
                out.append((name, .text(try ClaimInput.text(source.replacementSource, field: name, limit: 2048))))
            case "purchase_date", "replacement_as_of", "warranty_expires":
                let value = name == "purchase_date" ? source.purchaseDate : name == "replacement_as_of" ? source.replacementAsOf : source.warrantyExpires
                out.append((name, .text(try ClaimInput.date(value, field: name))))
            case "purchase_price", "replacement_value":
                let prefix = name == "purchase_price" ? "purchase" : "replacement"
                let money = try ClaimInput.money(name == "purchase_price" ? source.purchasePrice : source.replacementValue, field: name)
                out.append(("\(prefix)_currency", .text(money?.currency ?? "")))
                out.append(("\(prefix)_minor", .integer(money?.minorUnits ?? 0)))
            case "tags": out.append(("tags", .text(joined(try ClaimInput.tags(source.tags)))))
            case "category_key": out.append(("category_key", .text(try ClaimInput.optionalKey(source.categoryKey, field: name))))
            case "custom_fields":
                let fields = try ClaimInput.customFields(source.customFields)
                out.append(("custom_fields", .text(fields.map { $0.name + unitSeparator + $0.value }.joined(separator: recordSeparator))))
            default: preconditionFailure("not a claim field: \(name)")
            }
        }
        return out
    }

    /// Tags and custom fields are stored joined by separators no checked text may hold (control
    /// characters are refused in them).
    static let unitSeparator = "\u{1F}"
    static let recordSeparator = "\u{1E}"

    static func joined(_ tags: [String]) -> String { tags.joined(separator: unitSeparator) }

    static func split(_ text: String, by separator: String) -> [String] {
        text.isEmpty ? [] : text.components(separatedBy: separator)
    }

    /// Fills `item`'s claim fields from a row of `ItemStore.columns`.
    static func read(_ row: Row, into item: inout Item) {
        let at = first
        item.locationKey = row[at].stringValue ?? ""
        item.quantity = Int32(truncatingIfNeeded: row[at + 1].int64Value ?? 1)
        item.brand = row[at + 2].stringValue ?? ""
        item.model = row[at + 3].stringValue ?? ""
        item.notes = row[at + 4].stringValue ?? ""
        item.purchaseDate = row[at + 5].stringValue ?? ""
        item.purchasePrice = money(row[at + 6].stringValue, row[at + 7].int64Value)
        item.purchasePlace = row[at + 8].stringValue ?? ""
        item.replacementValue = money(row[at + 9].stringValue, row[at + 10].int64Value)
        item.replacementSource = row[at + 11].stringValue ?? ""
        item.replacementAsOf = row[at + 12].stringValue ?? ""
        item.warrantyExpires = row[at + 13].stringValue ?? ""
        item.tags = split(row[at + 14].stringValue ?? "", by: unitSeparator)
        item.categoryKey = row[at + 15].stringValue ?? ""
        item.customFields = split(row[at + 16].stringValue ?? "", by: recordSeparator).map { record in
            let parts = record.components(separatedBy: unitSeparator)
            var field = CustomField()
            field.name = parts[0]
            field.value = parts.count > 1 ? parts[1...].joined(separator: unitSeparator) : ""
            return field
        }
        item.photos = photos(keys: item.photoKeys, roles: row[at + 17].stringValue ?? "")
    }

    /// The photos with their roles; a photo with no stored role (attached before roles) is a PHOTO.
    static func photos(keys: [String], roles text: String) -> [ItemPhoto] {
        let roles = text.split(separator: " ").map { Int32($0) ?? 0 }
        return keys.enumerated().map { index, key in
            var photo = ItemPhoto()
            photo.imageKey = key
            photo.role = PhotoRole(rawValue: index < roles.count ? roles[index] : 0)
            return photo
        }
    }

    /// The roles column for `photos`.
    static func roles(_ photos: [ItemPhoto]) -> String {
        photos.map { String($0.role.rawValue) }.joined(separator: " ")
    }

    private static func money(_ currency: String?, _ minor: Int64?) -> Money? {
        guard let minor, minor != 0 else { return nil }
        return Money(currency: currency ?? "", minorUnits: minor)
    }
}
