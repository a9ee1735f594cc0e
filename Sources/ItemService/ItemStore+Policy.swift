import Foundation
import Proto
import SQLite

/// Coverage categories (how items depreciate, sub-limits) and the one policy.
extension ItemStore {
    static let categoryColumns =
        "key, name, depreciation, useful_life_years, floor_percent, limit_currency, limit_minor, created_at_ms, updated_at_ms, version"

    /// Creates a category, or returns the one created before with the same client-chosen key.
    public func createCategory(_ request: CreateCategoryRequest, now: Int64) throws -> Category {
        try addCategory(request, now: now).category
    }

    /// `createCategory`, telling whether this call created it (false: a repeat of a create).
    func addCategory(_ request: CreateCategoryRequest, now: Int64) throws -> (category: Category, created: Bool) {
        let name = try ClaimInput.name(request.name, limit: ClaimInput.maxCategoryNameLength)
        let rule = try Self.depreciation(request.depreciation, years: request.usefulLifeYears, floor: request.floorPercent)
        let limit = try ClaimInput.money(request.limit, field: "limit")
        let key = request.key.isEmpty ? UUID().uuidString.lowercased() : try ItemInput.key(request.key, field: "key")
        return try write {
            if !request.key.isEmpty {
                if let existing = try findCategory(key: key) { return (existing, false) }
                if let deletedAt = try db.scalar("SELECT deleted_at_ms FROM deleted_categories WHERE key = ?", [.text(key)])?.int64Value {
                    throw ItemStoreError.failedPrecondition(
                        "key \(key) belonged to a category deleted at \(deletedAt) ms; create with a new key")
                }
            }
            try checkCategoryName(name, except: nil)
            try db.execute(
                "INSERT INTO categories (\(Self.categoryColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                [
                    .text(key), .text(name), .integer(Int64(rule.method.rawValue)), .integer(Int64(rule.years)),
                    .integer(Int64(rule.floor)), .text(limit?.currency ?? ""), .integer(limit?.minorUnits ?? 0), .integer(now), .integer(now),
                ])
            try recordCategory("category.created", key: key, now: now)
            return (try findCategory(key: key)!, true)
        }
    }

    /// Every category by name, each with its item count.
    public func listCategories() throws -> ListCategoriesResponse {
        var response = ListCategoriesResponse()
        response.categories = try categories()
        return response
    }

    /// Changes the fields named in `update_mask`.
    public func updateCategory(_ request: UpdateCategoryRequest, now: Int64) throws -> Category {
        let key = try ItemInput.key(request.key, field: "key")
        guard !request.updateMask.isEmpty else {
            throw ItemStoreError.invalidArgument(
                "update_mask must name at least one of name, depreciation, useful_life_years, floor_percent, limit (got none)")
        }
        let known = ["name", "depreciation", "useful_life_years", "floor_percent", "limit"]
        let mask = request.updateMask.map { $0 == "usefulLifeYears" ? "useful_life_years" : $0 == "floorPercent" ? "floor_percent" : $0 }
        if let unknown = mask.first(where: { !known.contains($0) }) {
            throw ItemStoreError.invalidArgument(
                "update_mask names an unknown field \(ItemInput.quoted(unknown)); use \(known.joined(separator: ", "))")
        }
        return try write {
            guard let before = try findCategory(key: key) else { throw ItemStoreError.notFound("no category with key \(key)") }
            if request.expectedVersion != 0 && request.expectedVersion != before.version {
                throw ItemStoreError.aborted(
                    "category \(key) is at version \(before.version), not expected_version \(request.expectedVersion); read it again and retry")
            }
            var after = before
            if mask.contains("name") { after.name = try ClaimInput.name(request.name, limit: ClaimInput.maxCategoryNameLength) }
            if mask.contains("depreciation") { after.depreciation = request.depreciation }
            if mask.contains("useful_life_years") { after.usefulLifeYears = request.usefulLifeYears }
            if mask.contains("floor_percent") { after.floorPercent = request.floorPercent }
            if mask.contains("limit") { after.limit = try ClaimInput.money(request.limit, field: "limit") }
            let rule = try Self.depreciation(after.depreciation, years: after.usefulLifeYears, floor: after.floorPercent)
            try checkCategoryName(after.name, except: key)
            try db.execute(
                """
                UPDATE categories SET name = ?, depreciation = ?, useful_life_years = ?, floor_percent = ?, limit_currency = ?,
                limit_minor = ?, updated_at_ms = ?, version = version + 1 WHERE key = ?
                """,
                [
                    .text(after.name), .integer(Int64(rule.method.rawValue)), .integer(Int64(rule.years)), .integer(Int64(rule.floor)),
                    .text(after.limit?.currency ?? ""), .integer(after.limit?.minorUnits ?? 0), .integer(now), .text(key),
                ])
            try recordCategory("category.updated", key: key, now: now)
            return try findCategory(key: key)!
        }
    }

    /// Deletes a category no item is in. Returns it as it was.
    @discardableResult
    public func deleteCategory(key: String, now: Int64) throws -> Category {
        let key = try ItemInput.key(key, field: "key")
        return try write {
            guard let deleted = try findCategory(key: key) else { throw ItemStoreError.notFound("no category with key \(key)") }
            let items = try db.scalar("SELECT count(*) FROM items WHERE category_key = ?", [.text(key)])?.int64Value ?? 0
            guard items == 0 else {
                throw ItemStoreError.failedPrecondition(
                    "category \(key) still has \(items) item\(items == 1 ? "" : "s"); change their category_key first")
            }
            try recordCategory("category.deleted", key: key, now: now)
            try db.execute("DELETE FROM categories WHERE key = ?", [.text(key)])
            try db.execute("INSERT OR REPLACE INTO deleted_categories (key, deleted_at_ms) VALUES (?, ?)", [.text(key), .integer(now)])
            return deleted
        }
    }

    /// Changes the policy's fields named in `update_mask`.
    public func updatePolicy(_ request: UpdatePolicyRequest, now: Int64) throws -> Policy {
        guard !request.updateMask.isEmpty else {
            throw ItemStoreError.invalidArgument(
                "update_mask must name at least one of currency, contents_limit, warn_at_percent, policyholder, insurer, policy_number, address (got none)")
        }
        let given = request.policy ?? Policy()
        return try write {
            var policy = try self.policy()
            if request.expectedVersion != 0 && request.expectedVersion != policy.version {
                throw ItemStoreError.aborted(
                    "the policy is at version \(policy.version), not expected_version \(request.expectedVersion); read it again and retry")
            }
            for entry in request.updateMask {
                switch entry {
                case "currency": policy.currency = try ClaimInput.currency(given.currency, field: "policy.currency")
                case "contents_limit", "contentsLimit": policy.contentsLimit = try ClaimInput.money(given.contentsLimit, field: "policy.contents_limit")
                case "warn_at_percent", "warnAtPercent":
                    let value = try ClaimInput.percent(given.warnAtPercent, field: "policy.warn_at_percent")
                    policy.warnAtPercent = value == 0 ? 80 : value
                case "policyholder": policy.policyholder = try ClaimInput.text(given.policyholder, field: "policy.policyholder")
                case "insurer": policy.insurer = try ClaimInput.text(given.insurer, field: "policy.insurer")
                case "policy_number", "policyNumber": policy.policyNumber = try ClaimInput.text(given.policyNumber, field: "policy.policy_number")
                case "address": policy.address = try ClaimInput.text(given.address, field: "policy.address", limit: 1024, multiline: true)
                default:
                    throw ItemStoreError.invalidArgument(
                        "update_mask names an unknown field \(ItemInput.quoted(entry)); use currency, contents_limit, warn_at_percent, policyholder, insurer, policy_number or address")
                }
            }
            try db.execute(
                """
                INSERT OR REPLACE INTO policy (id, currency, contents_limit_currency, contents_limit_minor, warn_at_percent,
                policyholder, insurer, policy_number, address, updated_at_ms, version) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(policy.currency), .text(policy.contentsLimit?.currency ?? ""), .integer(policy.contentsLimit?.minorUnits ?? 0),
                    .integer(Int64(policy.warnAtPercent)), .text(policy.policyholder), .text(policy.insurer), .text(policy.policyNumber),
                    .text(policy.address), .integer(now), .integer(policy.version + 1),
                ])
            try recordPolicy(now: now)
            return try self.policy()
        }
    }

    // MARK: Helpers

    private func findCategory(key: String) throws -> Category? {
        guard let row = try db.query("SELECT \(Self.categoryColumns) FROM categories WHERE key = ?", [.text(key)]).first else { return nil }
        var category = Self.category(from: row)
        category.itemCount = try db.scalar("SELECT count(*) FROM items WHERE category_key = ?", [.text(key)])?.int64Value ?? 0
        return category
    }

    private func checkCategoryName(_ name: String, except key: String?) throws {
        if let row = try db.query("SELECT key FROM categories WHERE name = ? COLLATE NOCASE", [.text(name)]).first,
            row[0].stringValue != key
        {
            throw ItemStoreError.failedPrecondition(
                "a category named \(ItemInput.quoted(name)) exists already (\(row[0].stringValue ?? "")); choose another name")
        }
    }

    /// A depreciation rule checked: STRAIGHT_LINE needs 1…100 years and a floor 0…100; NONE
    /// stores neither.
    static func depreciation(_ method: DepreciationMethod, years: Int32, floor: Int32) throws -> (
        method: DepreciationMethod, years: Int32, floor: Int32
    ) {
        switch method {
        case .none: return (.none, 0, 0)
        case .straightLine:
            guard (1...100).contains(years) else {
                throw ItemStoreError.invalidArgument(
                    "useful_life_years must be 1…100 for DEPRECIATION_METHOD_STRAIGHT_LINE (got \(years))")
            }
            return (.straightLine, years, try ClaimInput.percent(floor, field: "floor_percent"))
        default:
            throw ItemStoreError.invalidArgument(
                "depreciation must be DEPRECIATION_METHOD_NONE or DEPRECIATION_METHOD_STRAIGHT_LINE (got \(method.rawValue))")
        }
    }

    static func category(from row: Row) -> Category {
        var category = Category()
        category.key = row[0].stringValue ?? ""
        category.name = row[1].stringValue ?? ""
        category.depreciation = DepreciationMethod(rawValue: Int32(truncatingIfNeeded: row[2].int64Value ?? 0))
        category.usefulLifeYears = Int32(truncatingIfNeeded: row[3].int64Value ?? 0)
        category.floorPercent = Int32(truncatingIfNeeded: row[4].int64Value ?? 0)
        if let minor = row[6].int64Value, minor > 0 { category.limit = Money(currency: row[5].stringValue ?? "", minorUnits: minor) }
        category.createdAtMs = row[7].int64Value ?? 0
        category.updatedAtMs = row[8].int64Value ?? 0
        category.version = row[9].int64Value ?? 0
        return category
    }
}

/// The policy and categories as the reads that value items see them (`ItemReads`).
extension ItemReads {
    /// The policy (its defaults until first updated).
    func policy() throws -> Policy {
        guard
            let row = try db.query(
                """
                SELECT currency, contents_limit_currency, contents_limit_minor, warn_at_percent, policyholder, insurer,
                policy_number, address, updated_at_ms, version FROM policy WHERE id = 1
                """
            ).first
        else {
            var policy = Policy()
            policy.currency = "USD"
            policy.warnAtPercent = 80
            return policy
        }
        var policy = Policy()
        policy.currency = row[0].stringValue ?? "USD"
        if let minor = row[2].int64Value, minor > 0 { policy.contentsLimit = Money(currency: row[1].stringValue ?? "", minorUnits: minor) }
        let warn = Int32(truncatingIfNeeded: row[3].int64Value ?? 0)
        policy.warnAtPercent = warn == 0 ? 80 : warn
        policy.policyholder = row[4].stringValue ?? ""
        policy.insurer = row[5].stringValue ?? ""
        policy.policyNumber = row[6].stringValue ?? ""
        policy.address = row[7].stringValue ?? ""
        policy.updatedAtMs = row[8].int64Value ?? 0
        policy.version = row[9].int64Value ?? 0
        return policy
    }

    /// Every category by name; with `counted`, each with its item count (a pass over the items).
    func categories(counted: Bool = true) throws -> [Category] {
        var counts: [String: Int64] = [:]
        if counted {
            for row in try db.query("SELECT category_key, count(*) FROM items WHERE category_key != '' GROUP BY category_key") {
                counts[row[0].stringValue ?? ""] = row[1].int64Value ?? 0
            }
        }
        return try db.query("SELECT \(ItemStore.categoryColumns) FROM categories ORDER BY name COLLATE NOCASE, key").map { row in
            var category = ItemStore.category(from: row)
            category.itemCount = counts[category.key] ?? 0
            return category
        }
    }
}
