import Proto
import SQLite

extension ItemStore {
    /// The page size when a request leaves it 0.
    public static let defaultPageSize: Int32 = 50
    /// The largest page.
    public static let maxPageSize: Int32 = 1000

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
        let column: String
        switch request.sort {
        case .manual: column = "position"
        case .name: column = "name COLLATE NOCASE"
        case .value: column = "value_in_dollars"
        case .created: column = "created_at_ms"
        default:
            throw ItemStoreError.invalidArgument(
                "sort must be one of ITEM_SORT_MANUAL, ITEM_SORT_NAME, ITEM_SORT_VALUE, ITEM_SORT_CREATED (got \(request.sort.rawValue))")
        }
        let pageSize = Int(request.pageSize == 0 ? Self.defaultPageSize : request.pageSize)
        var conditions: [String] = []
        var params: [SQLiteValue] = []
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
            conditions.append("id IN (SELECT rowid FROM items_search WHERE items_search MATCH ?)")
            params.append(.text(phrase))
        } else if !request.query.isEmpty {
            conditions.append("(name LIKE ? ESCAPE '\\' OR serial_number LIKE ? ESCAPE '\\')")
            let pattern = "%" + Self.escapeLike(request.query) + "%"
            params += [.text(pattern), .text(pattern)]
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let filterParams = params
        if !request.pageToken.isEmpty {
            let token = try ItemPageToken(decoding: request.pageToken)
            guard token.sort == request.sort.rawValue, token.descending == request.descending, token.query == request.query else {
                throw ItemStoreError.invalidArgument(
                    "page_token was issued for another sort, direction or query; repeat the first page's sort, descending and query with it")
            }
            conditions.append("(\(column), id) \(request.descending ? "<" : ">") (?, ?)")
            switch token.last {
            case let .integer(value): params.append(.integer(value))
            case let .text(value): params.append(.text(value))
            }
            params.append(.integer(token.lastID))
        }
        let direction = request.descending ? "DESC" : "ASC"
        let rows = try db.query(
            "SELECT \(Self.columns) FROM items"
                + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
                + " ORDER BY \(column) \(direction), id \(direction) LIMIT ?",
            params + [.integer(Int64(pageSize + 1))])

        var response = ListItemsResponse()
        response.items = rows.prefix(pageSize).map(Self.item(from:))
        if rows.count > pageSize, let last = rows.prefix(pageSize).last {
            let value: ItemPageToken.Value
            switch request.sort {
            case .manual: value = .integer(last[10].int64Value ?? 0)
            case .name: value = .text(last[2].stringValue ?? "")
            case .value: value = .integer(last[4].int64Value ?? 0)
            default: value = .integer(last[5].int64Value ?? 0)
            }
            response.nextPageToken = ItemPageToken(
                sort: request.sort.rawValue, descending: request.descending, query: request.query, last: value,
                lastID: last[0].int64Value ?? 0
            ).encoded()
        }
        if request.query.isEmpty {
            response.totalCount = Int64(order.count)
        } else if let searchCount {
            response.totalCount = searchCount
        } else {
            response.totalCount = try db.scalar("SELECT count(*) FROM items" + filter, filterParams)?.int64Value ?? 0
        }
        return response
    }

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
