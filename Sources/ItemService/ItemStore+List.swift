import Proto
import SQLite

extension ItemStore {
    /// The page size when a request leaves it 0.
    public static let defaultPageSize: Int32 = 50
    /// The largest page.
    public static let maxPageSize: Int32 = 1000
    /// `columns`, each named as `items`' (the text index has columns of the same names).
    static let qualifiedColumns = columns.split(separator: ",").map { "items." + $0.trimmingCharacters(in: .whitespaces) }
        .joined(separator: ", ")

    /// The most matches a search ranks by relevance; beyond, ranking them all would cost tens
    /// of milliseconds (about 1 µs a match), so they come newest first.
    public static let maxRankedMatches: Int64 = 2000

    /// One page of items in the requested order, with a cursor to the next page.
    public func list(_ request: ListItemsRequest) throws -> ListItemsResponse {
        guard request.pageSize >= 0 && request.pageSize <= Self.maxPageSize else {
            throw ItemStoreError.invalidArgument(
                "page_size must be 0…\(Self.maxPageSize) (got \(request.pageSize)); 0 means \(Self.defaultPageSize)")
        }
        guard request.query.count <= ItemInput.maxQueryLength else {
            throw ItemStoreError.invalidArgument(
                "query must be at most \(ItemInput.maxQueryLength) characters (got \(request.query.count))")
        }
        let valuation = try request.asOf.isEmpty ? nil : valuator(asOf: request.asOf)
        var filter = try itemFilter(request)
        let sort = request.sort == .manual && !request.search.isEmpty ? ItemSort.relevance : request.sort
        var token: ItemPageToken?
        if !request.pageToken.isEmpty { token = try ItemPageToken(decoding: request.pageToken) }
        // How many items the words match, ranked or not: a later page follows its first's choice.
        var textMatches: Int64?
        if let match = filter.textQuery {
            textMatches = try db.scalar("SELECT count(*) FROM items_text WHERE items_text MATCH ?", [.text(match)])?.int64Value ?? 0
        }
        let ranked: Bool
        if let token, sort == .relevance {
            if case .real = token.last { ranked = true } else { ranked = false }
        } else {
            ranked = sort == .relevance && (textMatches ?? 0) <= Self.maxRankedMatches
        }
        let column: String
        switch sort {
        case .manual: column = "position"
        case .name: column = "name COLLATE NOCASE"
        case .value: column = "value_in_dollars"
        case .created: column = "created_at_ms"
        case .relevance:
            guard !request.search.isEmpty else {
                throw ItemStoreError.invalidArgument("sort ITEM_SORT_RELEVANCE ranks by search; set search, or choose another sort")
            }
            column = ranked ? "text_rank" : "items_text.rowid"
        default:
            throw ItemStoreError.invalidArgument(
                "sort must be one of ITEM_SORT_MANUAL, ITEM_SORT_NAME, ITEM_SORT_VALUE, ITEM_SORT_CREATED, ITEM_SORT_RELEVANCE (got \(request.sort.rawValue))")
        }
        let pageSize = Int(request.pageSize == 0 ? Self.defaultPageSize : request.pageSize)
        if sort == .relevance, ranked, let match = filter.textQuery, filter.onlyText, request.query.isEmpty {
            try Self.checkToken(token, request, fingerprint: filter.fingerprint)
            return try rankedTextPage(
                match: match, request: request, after: token, pageSize: pageSize, valuation: valuation, fingerprint: filter.fingerprint,
                total: textMatches ?? 0)
        }
        // Unranked matches come newest first (descending: oldest first).
        let descending = sort == .relevance && !ranked ? !request.descending : request.descending
        // The trigram index counts the matches of a query of 3 characters or more. The page
        // comes from the index when matches are few; when they are many, scanning the sort
        // order finds a page of them sooner than collecting them all (51 × total / matches
        // rows scanned against `matches` collected). Shorter queries scan.
        var searchCount: Int64?
        var useIndex = false
        let phrase = "\"" + request.query.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        if request.query.count >= 3 {
            let count = try db.scalar("SELECT count(*) FROM items_search WHERE items_search MATCH ?", [.text(phrase)])?.int64Value ?? 0
            searchCount = count
            useIndex = count * count <= 64 * Int64(max(order.count, 1))
        }
        if useIndex {
            filter.add("id IN (SELECT rowid FROM items_search WHERE items_search MATCH ?)", [.text(phrase)])
        } else if !request.query.isEmpty {
            let pattern = "%" + Self.escapeLike(request.query) + "%"
            filter.add("(items.name LIKE ? ESCAPE '\\' OR items.serial_number LIKE ? ESCAPE '\\')", [.text(pattern), .text(pattern)])
        }
        // A search takes one of three shapes. Ranked: the matches with their rank, joined to
        // items. Unranked: the text index drives, in rowid order, probing items for the other
        // filters, and stops at a page (FTS5 streams rowids in order; no match is sorted or
        // ranked). Another sort: the matches as a set items are filtered by.
        var source = "items"
        var sourceParams: [SQLiteValue] = []
        var selected = Self.columns
        var conditions = filter.conditions
        var params = filter.params
        if let match = filter.textQuery {
            if sort == .relevance && ranked {
                source += " JOIN (SELECT rowid AS text_id, rank AS text_rank FROM items_text WHERE items_text MATCH ?) ON text_id = items.id"
                sourceParams = [.text(match)]
                selected += ", text_rank"
            } else if sort == .relevance {
                source = "items_text JOIN items ON items.id = items_text.rowid"
                conditions.insert("items_text MATCH ?", at: 0)
                params.insert(.text(match), at: 0)
                selected = Self.qualifiedColumns
            } else {
                conditions.append("items.id IN (SELECT rowid FROM items_text WHERE items_text MATCH ?)")
                params.append(.text(match))
            }
        }
        let counted = (
            sql: "SELECT count(*) FROM items" + (conditions.isEmpty && filter.textQuery == nil ? "" : " WHERE ")
                + (filter.conditions + (filter.textQuery == nil ? [] : ["items.id IN (SELECT rowid FROM items_text WHERE items_text MATCH ?)"]))
                .joined(separator: " AND "),
            params: filter.params + (filter.textQuery.map { [SQLiteValue.text($0)] } ?? [])
        )
        params = sourceParams + params
        if let token {
            try Self.checkToken(token, request, fingerprint: filter.fingerprint)
            if sort == .relevance && !ranked {
                // The rowid is the item's id: one column orders them, so the index can seek.
                conditions.append("items_text.rowid \(descending ? "<" : ">") ?")
                params.append(.integer(token.lastID))
            } else {
                conditions.append("(\(column), id) \(descending ? "<" : ">") (?, ?)")
            }
            switch sort == .relevance && !ranked ? nil : token.last {
            case nil: break
            case let .integer(value)?: params.append(.integer(value))
            case let .text(value)?: params.append(.text(value))
            case let .real(value)?: params.append(.real(value))
            }
            if !(sort == .relevance && !ranked) { params.append(.integer(token.lastID)) }
        }
        let direction = descending ? "DESC" : "ASC"
        let orderBy = sort == .relevance && !ranked ? "\(column) \(direction)" : "\(column) \(direction), id \(direction)"
        let rows = try db.query(
            "SELECT \(selected) FROM \(source)"
                + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
                + " ORDER BY \(orderBy) LIMIT ?",
            params + [.integer(Int64(pageSize + 1))])

        var response = ListItemsResponse()
        response.ranked = ranked
        response.items = rows.prefix(pageSize).map { row in
            var item = Self.item(from: row)
            if let valuation { item.valuation = valuation.value(item) }
            return item
        }
        if rows.count > pageSize, let last = rows.prefix(pageSize).last {
            let value: ItemPageToken.Value
            switch sort {
            case .manual: value = .integer(last[10].int64Value ?? 0)
            case .name: value = .text(last[2].stringValue ?? "")
            case .value: value = .integer(last[4].int64Value ?? 0)
            case .relevance: value = ranked ? .real(last[last.count - 1].doubleValue ?? 0) : .integer(last[0].int64Value ?? 0)
            default: value = .integer(last[5].int64Value ?? 0)
            }
            response.nextPageToken = ItemPageToken(
                sort: request.sort.rawValue, descending: request.descending, query: filter.fingerprint, last: value,
                lastID: last[0].int64Value ?? 0
            ).encoded()
        }
        if filter.isEmpty && request.query.isEmpty {
            response.totalCount = Int64(order.count)
        } else if let searchCount, filter.isEmpty {
            response.totalCount = searchCount
        } else if let textMatches, filter.onlyText && request.query.isEmpty {
            response.totalCount = textMatches
        } else {
            response.totalCount = try db.scalar(counted.sql, counted.params)?.int64Value ?? 0
        }
        return response
    }

    /// Refuses a page token issued for another sort, direction, query or filter.
    private static func checkToken(_ token: ItemPageToken?, _ request: ListItemsRequest, fingerprint: String) throws {
        guard let token else { return }
        guard token.sort == request.sort.rawValue, token.descending == request.descending, token.query == fingerprint else {
            throw ItemStoreError.invalidArgument(
                "page_token was issued for another sort, direction, query or filter; repeat the first page's request with it")
        }
    }

    /// A ranked search with no other filter: the text index ranks its matches and sorts them
    /// as (rank, rowid) pairs, one page of them, and the page's items are then read by id. The
    /// join the other shapes use sorted whole item rows instead: at 1,000 matches this takes
    /// half the time. The order, the page tokens and `ranked` are the join's.
    private func rankedTextPage(
        match: String, request: ListItemsRequest, after token: ItemPageToken?, pageSize: Int, valuation: Valuator?,
        fingerprint: String, total: Int64
    ) throws -> ListItemsResponse {
        var sql = "SELECT rowid, rank FROM items_text WHERE items_text MATCH ?"
        var params: [SQLiteValue] = [.text(match)]
        let comparison = request.descending ? "<" : ">"
        if let token, case .real(let rank) = token.last {
            sql += " AND (rank \(comparison) ? OR (rank = ? AND rowid \(comparison) ?))"
            params += [.real(rank), .real(rank), .integer(token.lastID)]
        }
        let direction = request.descending ? "DESC" : "ASC"
        sql += " ORDER BY rank \(direction), rowid \(direction) LIMIT ?"
        params.append(.integer(Int64(pageSize + 1)))
        let matches = try db.query(sql, params)
        let page = matches.prefix(pageSize).map { (id: $0[0].int64Value ?? 0, rank: $0[1].doubleValue ?? 0) }
        var items: [Int64: Item] = [:]
        if !page.isEmpty {
            let rows = try db.query(
                "SELECT \(Self.columns) FROM items WHERE id IN (\(page.map { _ in "?" }.joined(separator: ", ")))",
                page.map { .integer($0.id) })
            for row in rows { items[row[0].int64Value ?? 0] = Self.item(from: row) }
        }
        var response = ListItemsResponse()
        response.ranked = true
        response.totalCount = total
        response.items = page.compactMap { match in
            guard var item = items[match.id] else { return nil }
            if let valuation { item.valuation = valuation.value(item) }
            return item
        }
        if matches.count > pageSize, let last = page.last {
            response.nextPageToken = ItemPageToken(
                sort: request.sort.rawValue, descending: request.descending, query: fingerprint, last: .real(last.rank), lastID: last.id
            ).encoded()
        }
        return response
    }

    /// The conditions of ListItems' filters (all but `query`, which `list` adds).
    func itemFilter(_ request: ListItemsRequest) throws -> ItemFilter {
        var filter = ItemFilter(fingerprint: request.query)
        if !request.locationKey.isEmpty {
            let key = try ItemInput.key(request.locationKey, field: "location_key")
            guard !request.unplaced else {
                throw ItemStoreError.invalidArgument("location_key and unplaced exclude each other (an item in no location is in none)")
            }
            if request.excludeSublocations {
                guard try db.scalar("SELECT 1 FROM locations WHERE key = ?", [.text(key)]) != nil else {
                    throw ItemStoreError.notFound("location_key: no location with key \(key); see ListLocations")
                }
                filter.add("location_key = ?", [.text(key)], fingerprint: "l=\(key)")
            } else {
                let keys = try locationTree().subtree(of: key).map(\.key)
                guard !keys.isEmpty else { throw ItemStoreError.notFound("location_key: no location with key \(key); see ListLocations") }
                filter.add(
                    "location_key IN (\(keys.map { _ in "?" }.joined(separator: ", ")))", keys.map { .text($0) }, fingerprint: "L=\(key)")
            }
        }
        if request.unplaced { filter.add("location_key = ''", [], fingerprint: "u") }
        if !request.tag.isEmpty {
            let tag = try ClaimInput.tags([request.tag], field: "tag")[0]
            filter.add("id IN (SELECT item_id FROM item_tags WHERE tag = ?)", [.text(tag)], fingerprint: "t=\(tag.lowercased())")
        }
        if !request.categoryKey.isEmpty {
            let key = try ItemInput.key(request.categoryKey, field: "category_key")
            filter.add("category_key = ?", [.text(key)], fingerprint: "c=\(key)")
        }
        if request.minValue != nil || request.maxValue != nil {
            let policy = try self.policy()
            let value = Self.replacementCostSQL(scale: Money.scale(of: policy.currency))
            let currency = Self.basisCurrencySQL
            for (name, money, comparison) in [("min_value", request.minValue, ">="), ("max_value", request.maxValue, "<=")] {
                guard let money else { continue }
                guard money.minorUnits >= 0 else { throw ItemStoreError.invalidArgument("\(name).minor_units must be ≥ 0 (got \(money.minorUnits))") }
                let given = try ClaimInput.currency(money.currency, field: "\(name).currency", allowEmpty: true)
                guard given.isEmpty || given == policy.currency else {
                    throw ItemStoreError.invalidArgument(
                        "\(name).currency must be the policy's currency \(policy.currency) or empty (got \(given))")
                }
                filter.add(
                    "(\(value)) \(comparison) ? AND \(currency) IN ('', ?)", [.integer(money.minorUnits), .text(policy.currency)],
                    fingerprint: "\(name)=\(money.minorUnits)")
            }
        }
        if !request.missing.isEmpty {
            var mask: ItemEvidence = []
            for (index, evidence) in request.missing.enumerated() {
                guard (1...5).contains(evidence.rawValue) else {
                    throw ItemStoreError.invalidArgument(
                        "missing[\(index)] must be one of EVIDENCE_PHOTO, _RECEIPT, _SERIAL, _VALUE, _PURCHASE_DATE (1…5; got \(evidence.rawValue))")
                }
                mask.insert(ItemEvidence(evidence))
            }
            filter.add("(evidence & ?) = 0", [.integer(mask.rawValue)], fingerprint: "m=\(mask.rawValue)")
        }
        if !request.search.isEmpty {
            guard request.search.count <= ItemInput.maxQueryLength else {
                throw ItemStoreError.invalidArgument(
                    "search must be at most \(ItemInput.maxQueryLength) characters (got \(request.search.count))")
            }
            guard let match = Self.textQuery(request.search) else {
                throw ItemStoreError.invalidArgument(
                    "search must hold at least one word of letters or digits (got \(ItemInput.quoted(request.search)))")
            }
            filter.search(match)
        }
        if !request.asOf.isEmpty { filter.fingerprint += "\u{1}a" }
        return filter
    }

    /// The FTS5 query for words typed by a person: each word a prefix, all of them required;
    /// nil when no word has a letter or digit.
    static func textQuery(_ text: String) -> String? {
        let words = text.split(whereSeparator: { $0.isWhitespace }).filter { word in
            word.unicodeScalars.contains { $0.properties.isAlphabetic || $0.properties.numericType != nil }
        }
        guard !words.isEmpty else { return nil }
        return words.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }.joined(separator: " ")
    }

    /// An item's replacement cost in minor units by its basis (docs/protocol.md §10, "Valuation"), in SQL over
    /// `items`' columns; `scale`: minor units per whole unit of the policy's currency.
    static func replacementCostSQL(scale: Int64) -> String {
        "(CASE WHEN replacement_minor > 0 THEN replacement_minor WHEN purchase_minor > 0 THEN purchase_minor "
            + "ELSE value_in_dollars * \(scale) END) * quantity"
    }

    /// The currency of an item's basis ('' for the policy's), in SQL.
    static let basisCurrencySQL =
        "(CASE WHEN replacement_minor > 0 THEN replacement_currency WHEN purchase_minor > 0 THEN purchase_currency ELSE '' END)"

    /// `text` with LIKE's wildcards escaped by `\`.
    static func escapeLike(_ text: String) -> String {
        var out = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out
    }
}

/// ListItems' filters as SQL: conditions on `items`, their parameters, the text query of a
/// search, and a fingerprint a page token carries.
struct ItemFilter {
    var fingerprint: String
    private(set) var conditions: [String] = []
    private(set) var params: [SQLiteValue] = []
    private var filtered = false
    /// The FTS5 query of `search`, if any.
    private(set) var textQuery: String?

    /// Whether the only filter is `search`.
    var onlyText: Bool { textQuery != nil && conditions.isEmpty }

    init(fingerprint: String) { self.fingerprint = fingerprint }

    /// Whether any filter but `query` narrows the items.
    var isEmpty: Bool { !filtered }


    mutating func add(_ condition: String, _ values: [SQLiteValue], fingerprint part: String? = nil) {
        conditions.append(condition)
        params += values
        if let part {
            fingerprint += "\u{1}" + part
            filtered = true
        }
    }

    /// The items `match` finds in the text index (`list` chooses how to join them).
    mutating func search(_ match: String) {
        fingerprint += "\u{1}s=" + match
        filtered = true
        textQuery = match
    }
}
