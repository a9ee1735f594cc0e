import Foundation
import Proto
import RPC
import Runtime

/// `homepwner item ls`: items in manual order (or sorted), following page tokens.
enum ItemListCommand {
    static let parser = OptionParser(
        command: "item ls", summary: "Lists items: the manual order by default, numbered as 'item mv' counts.",
        usage: "homepwner item ls [--search WORDS] [--location L [--only-here]] [--unplaced] [--tag T] [--category C] [--missing EVIDENCE]... [--min-value A] [--max-value A] [--query Q] [--sort manual|name|value|created|relevance] [--desc] [--limit N] [--as-of DATE]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "search", help: "words, each the start of a word in any field or the location (ranked)", valueName: "WORDS"),
            OptionSpec(name: "location", help: "only items in this location (path, name or key) or below it", valueName: "L"),
            OptionSpec(name: "only-here", help: "with --location: not those in its sublocations", isFlag: true),
            OptionSpec(name: "unplaced", help: "only items in no location", isFlag: true),
            OptionSpec(name: "tag", help: "only items with this tag", valueName: "T"),
            OptionSpec(name: "category", help: "only items in this category (name or key)", valueName: "C"),
            OptionSpec(
                name: "missing", help: "only items lacking it: photo, receipt, serial, value, purchase-date (repeat: lacking all)",
                valueName: "EVIDENCE"),
            OptionSpec(name: "min-value", help: "only items whose replacement cost is at least A (policy currency)", valueName: "A"),
            OptionSpec(name: "max-value", help: "only items whose replacement cost is at most A (policy currency)", valueName: "A"),
            OptionSpec(name: "as-of", help: "with --json: value each item (RCV, ACV) as of this date", valueName: "YYYY-MM-DD|today"),
            OptionSpec(name: "query", help: "only items whose name or serial contains Q (any case)", valueName: "Q"),
            OptionSpec(name: "sort", defaultValue: "manual", help: "manual, name, value, created or relevance (with --search)", valueName: "ORDER"),
            OptionSpec(name: "desc", help: "reverse the order", isFlag: true),
            OptionSpec(name: "limit", help: "print at most N items (default: all)", valueName: "N"),
        ])

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = ListItemsRequest()
        var limit = Int.max
        do {
            switch try options.string("sort") {
            case "manual": request.sort = .manual
            case "name": request.sort = .name
            case "value": request.sort = .value
            case "created": request.sort = .created
            case "relevance": request.sort = .relevance
            case let other:
                throw OptionError.invalidValue(option: "--sort", value: other, reason: "one of manual, name, value, created, relevance")
            }
            request.missing = try options.all("missing").map { text in
                switch text.lowercased().replacingOccurrences(of: "_", with: "-") {
                case "photo": .photo
                case "receipt": .receipt
                case "serial": .serial
                case "value": .value
                case "purchase-date", "date": .purchaseDate
                default:
                    throw OptionError.invalidValue(
                        option: "--missing", value: text, reason: "one of photo, receipt, serial, value, purchase-date")
                }
            }
            for (flag, keyPath) in [("min-value", \ListItemsRequest.minValue), ("max-value", \ListItemsRequest.maxValue)] {
                guard let text = options[flag] else { continue }
                request[keyPath: keyPath] = try ClaimFlags.money(text, flag: "--" + flag)
            }
            if options["limit"] != nil {
                limit = try options.int("limit")
                guard limit > 0 else { throw OptionError.invalidValue(option: "--limit", value: String(limit), reason: "must be ≥ 1") }
            }
        } catch {
            printError("homepwner item ls: \(error)")
            return ExitCode.usage
        }
        request.query = options["query"] ?? ""
        request.search = options["search"] ?? ""
        request.tag = options["tag"] ?? ""
        request.unplaced = options.bool("unplaced")
        request.excludeSublocations = options.bool("only-here")
        request.asOf = options["as-of"] ?? ""
        request.descending = options.bool("desc")
        request.pageSize = 500
        return await ItemCommand.withClient(options) { client, timeout in
            var request = request
            if let location = options["location"] {
                request.locationKey = try await InventoryLookup.location(location, client: client, timeout: timeout).key
            }
            if let category = options["category"] {
                request.categoryKey = try await InventoryLookup.category(category, client: client, timeout: timeout).key
            }
            var items: [Item] = []
            var total: Int64 = 0
            repeat {
                let page = try await client.call(ItemServiceRPC.listItems, request, options: .init(timeoutMilliseconds: timeout))
                items += page.items
                total = page.totalCount
                request.pageToken = page.nextPageToken
            } while !request.pageToken.isEmpty && items.count < limit
            items = Array(items.prefix(limit))
            if options.bool("json") {
                let texts = try items.map { try ItemCommand.itemJSON($0) }
                print("{\"total_count\": \(total), \"items\": [" + (texts.isEmpty ? "" : "\n" + texts.joined(separator: ",\n") + "\n") + "]}")
                return
            }
            // Indexes are only the manual order's when nothing filters or reorders it.
            let manual = request.sort == .manual && !request.descending && request.query.isEmpty && request.search.isEmpty
                && request.locationKey.isEmpty && request.tag.isEmpty && request.categoryKey.isEmpty && request.missing.isEmpty
                && !request.unplaced && request.minValue == nil && request.maxValue == nil
            printTable(items, firstIndex: manual ? 0 : nil)
            print("\(items.count) of \(total) item\(total == 1 ? "" : "s")")
        }
    }

    /// KEY NAME SERIAL VALUE CREATED PHOTOS, with an INDEX column when `firstIndex` is given.
    static func printTable(_ items: [Item], firstIndex: Int?) {
        var rows = [(firstIndex == nil ? [] : ["#"]) + ["KEY", "NAME", "SERIAL", "VALUE", "CREATED", "PHOTOS"]]
        for (offset, item) in items.enumerated() {
            rows.append(
                (firstIndex.map { [String($0 + offset)] } ?? []) + [
                    item.key, item.name, item.serialNumber.isEmpty ? "-" : item.serialNumber, "$\(item.valueInDollars)",
                    ItemCommand.timestamp(item.createdAtMs), String(item.photoKeys.count),
                ])
        }
        printColumns(rows)
    }
}
