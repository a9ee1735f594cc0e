import Foundation
import Proto
import RPC
import Runtime

/// `homepwner item ls`: items in manual order (or sorted), following page tokens.
enum ItemListCommand {
    static let parser = OptionParser(
        command: "item ls", summary: "Lists items: the manual order by default, numbered as 'item mv' counts.",
        usage: "homepwner item ls [--query Q] [--sort manual|name|value|created] [--desc] [--limit N]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "query", help: "only items whose name or serial contains Q (any case)", valueName: "Q"),
            OptionSpec(name: "sort", defaultValue: "manual", help: "manual, name, value or created", valueName: "ORDER"),
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
            case let other:
                throw OptionError.invalidValue(option: "--sort", value: other, reason: "one of manual, name, value, created")
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
        request.descending = options.bool("desc")
        request.pageSize = 500
        return await ItemCommand.withClient(options) { client, timeout in
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
            let manual = request.sort == .manual && !request.descending && request.query.isEmpty
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
