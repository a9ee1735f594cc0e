import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner item add|ls|show|edit|rm|mv`: the item service for people (tables) and scripts (`--json`).
enum ItemCommand {
    static let subcommands: [(name: String, usage: String)] = [
        ("add", "item add NAME [--serial S] [--value N] [--key UUID] [--location L --price P ... (claim fields)] | item add --random [--count N]"),
        ("ls", "item ls [--search WORDS] [--location L] [--tag T] [--missing receipt] [--query Q] [--sort ...] [--limit N]"),
        ("show", "item show KEY [--as-of DATE]"),
        ("edit", "item edit KEY [--name N] [--serial S] [--value V] [--location L --price P ... (claim fields)] [--expect-version N]"),
        ("rm", "item rm KEY"),
        ("mv", "item mv FROM TO  (indexes in the manual order, as 'item ls' numbers them)"),
        ("stats", "item stats  (item count, deletes whose image cascade is still pending)"),
        ("photo", "item photo add|rm|primary|order ITEM IMAGE...  (attach, detach, primary, order)"),
    ]

    static var overview: String {
        "OVERVIEW: Adds, lists, shows, edits, removes and moves items.\n\nUSAGE:\n"
            + subcommands.map { "  homepwner \($0.usage)" }.joined(separator: "\n")
            + "\n\nEvery subcommand takes --item ENDPOINT, --timeout MS and --json; see 'homepwner item SUBCOMMAND --help'.\n"
            + "Exit codes: 0 ok, 2 usage, 3 invalid input, 4 not found, 5 unavailable, 6 conflict."
    }

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "item", overview: overview, names: subcommands.map(\.name), arguments) { subcommand, rest in
            switch subcommand {
            case "add": await add(rest)
            case "ls", "list": await ItemListCommand.run(rest)
            case "show", "get": await show(rest)
            case "edit": await edit(rest)
            case "rm", "delete": await remove(rest)
            case "mv", "move": await move(rest)
            case "stats": await stats(rest)
            case "photo", "photos": await ItemPhotoCommand.run(rest)
            default: nil
            }
        }
    }

    // MARK: Subcommands

    static let addParser = OptionParser(
        command: "item add", summary: "Creates an item, or --count random items like the seed's +randomItem.",
        usage: "homepwner item add NAME [--serial S] [--value N] [--key UUID] [claim fields] | homepwner item add --random [--count N]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "serial", help: "serial number", valueName: "S"),
            OptionSpec(name: "value", help: "value in whole units (the original app's value_in_dollars)", valueName: "N"),
            OptionSpec(name: "key", help: "a UUID of your choosing: adding it again returns the first item", valueName: "UUID"),
            OptionSpec(name: "random", help: "a random item: {Fluffy, Rusty, Shiny} × {Bear, Spork, Mac}", isFlag: true),
            OptionSpec(name: "count", help: "how many random items (with --random)", valueName: "N"),
        ] + ClaimFlags.options,
        allowsPositionals: true)

    static func add(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(addParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let random = options.bool("random")
        var request = CreateItemRequest()
        var count = 1
        do {
            if random {
                guard options.positionals.isEmpty, options["serial"] == nil, options["value"] == nil else {
                    throw usage("--random makes up the name, serial and value; give none of them")
                }
                request.random = true
                if options["count"] != nil {
                    count = try options.int("count")
                    guard (1...100_000).contains(count) else {
                        throw OptionError.invalidValue(option: "--count", value: String(count), reason: "must be 1…100000")
                    }
                }
            } else {
                guard options.positionals.count == 1 else { throw usage("expected one NAME (quote a name with spaces), or --random") }
                guard options["count"] == nil else { throw usage("--count needs --random") }
                request.name = options.positionals[0]
                request.serialNumber = options["serial"] ?? ""
                if options["value"] != nil { request.valueInDollars = Int64(try options.int("value")) }
            }
            request.key = options["key"] ?? ""
            if !request.key.isEmpty && count > 1 { throw usage("--key creates one item; leave out --count") }
        } catch {
            printError("homepwner item add: \(error)")
            return ExitCode.usage
        }
        return await withClient(options) { client, timeout in
            var items: [Item] = []
            let showProgress = count > 1 && !options.bool("json") && isatty(STDERR_FILENO) == 1
            var request = request
            _ = try await ClaimFlags.apply(options, to: &request, client: client, timeout: timeout)
            // 16 in flight: creates that arrive together share one commit on the server.
            let create = request
            for start in stride(from: 0, to: count, by: 16) {
                let chunk = try await withThrowingTaskGroup(of: (Int, Item).self) { group in
                    for index in start..<min(count, start + 16) {
                        group.addTask {
                            (index, try await client.call(ItemServiceRPC.createItem, create, options: .init(timeoutMilliseconds: timeout)))
                        }
                    }
                    return try await group.reduce(into: [(Int, Item)]()) { $0.append($1) }
                }
                items += chunk.sorted { $0.0 < $1.0 }.map(\.1)
                if showProgress { FileHandle.standardError.write(Data("\radded \(items.count)/\(count)".utf8)) }
            }
            if showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
            if options.bool("json") {
                let texts = try items.map { try itemJSON($0) }
                print(options["count"] == nil ? texts[0] : "[\n" + texts.joined(separator: ",\n") + "\n]")
            } else {
                ItemListCommand.printTable(items, firstIndex: nil)
            }
        }
    }

    static let showParser = OptionParser(
        command: "item show", summary: "Prints an item as the seed described it, then its details.",
        usage: "homepwner item show KEY [--as-of DATE]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "as-of", help: "also value it (RCV, ACV) as of this date, or today", valueName: "YYYY-MM-DD|today")
        ],
        allowsPositionals: true)

    static func show(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(showParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return usageError("item show", "expected one KEY") }
        return await withClient(options) { client, timeout in
            var request = GetItemRequest()
            request.key = options.positionals[0]
            request.asOf = options["as-of"] ?? ""
            let item = try await client.call(ItemServiceRPC.getItem, request, options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                print(try itemJSON(item))
                return
            }
            print(description(of: item))
            var rows = [
                ["key", item.key], ["version", String(item.version)],
                ["updated", timestamp(item.updatedAtMs)],
                ["photos", item.photos.isEmpty ? "none" : item.photos.map { photo in
                    photo.imageKey + (photo.role == .photo ? "" : " (\(roleName(photo.role)))")
                        + (photo.imageKey == item.primaryPhotoKey ? " (primary)" : "")
                }.joined(separator: "\n         ")],
            ]
            rows += try await claimRows(item, client: client, timeout: timeout)
            printColumns(rows)
        }
    }

    static let editParser = OptionParser(
        command: "item edit", summary: "Changes the given fields of an item (the others stay).",
        usage: "homepwner item edit KEY [--name N] [--serial S] [--value V] [claim fields] [--expect-version N]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "name", help: "new name", valueName: "NAME"),
            OptionSpec(name: "serial", help: "new serial number (\"\" clears it)", valueName: "S"),
            OptionSpec(name: "value", help: "new value in whole units (value_in_dollars)", valueName: "N"),
            OptionSpec(name: "expect-version", help: "refuse (exit 6) unless the item is at this version", valueName: "N"),
        ] + ClaimFlags.options,
        allowsPositionals: true)

    static func edit(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(editParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = UpdateItemRequest()
        do {
            guard options.positionals.count == 1 else { throw usage("expected one KEY") }
            request.key = options.positionals[0]
            if let name = options["name"] {
                request.updateMask.append("name")
                request.name = name
            }
            if let serial = options["serial"] {
                request.updateMask.append("serial_number")
                request.serialNumber = serial
            }
            if options["value"] != nil {
                request.updateMask.append("value_in_dollars")
                request.valueInDollars = Int64(try options.int("value"))
            }
            if options["expect-version"] != nil { request.expectedVersion = Int64(try options.int("expect-version")) }
            guard !request.updateMask.isEmpty || ClaimFlags.options.contains(where: { options[$0.name] != nil }) else {
                throw usage("nothing to change: give --name, --serial, --value or a claim field (see --help)")
            }
        } catch {
            printError("homepwner item edit: \(error)")
            return ExitCode.usage
        }
        return await withClient(options) { client, timeout in
            var request = request
            request.updateMask += try await ClaimFlags.apply(options, to: &request, client: client, timeout: timeout)
            let item = try await client.call(ItemServiceRPC.updateItem, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try itemJSON(item) : description(of: item) + " (version \(item.version))")
        }
    }

    static let removeParser = OptionParser(
        command: "item rm", summary: "Deletes an item; its images are deleted by the image service (the cascade).",
        usage: "homepwner item rm KEY", options: CommonOptions.endpoints, allowsPositionals: true)

    static func remove(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(removeParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return usageError("item rm", "expected one KEY") }
        return await withClient(options) { client, timeout in
            var request = DeleteItemRequest()
            request.key = options.positionals[0]
            _ = try await client.call(ItemServiceRPC.deleteItem, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? "{\"deleted\": \(jsonString(request.key))}" : "deleted \(request.key)")
        }
    }

    static let moveParser = OptionParser(
        command: "item mv", summary: "Moves the item at index FROM to index TO in the manual order (0 is the first).",
        usage: "homepwner item mv FROM TO", options: CommonOptions.endpoints, allowsPositionals: true)

    static func move(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(moveParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 2, let from = Int32(options.positionals[0]), let to = Int32(options.positionals[1]) else {
            return usageError("item mv", "expected two indexes FROM TO, e.g. 'homepwner item mv 3 0'")
        }
        return await withClient(options) { client, timeout in
            var request = MoveItemRequest()
            request.fromIndex = from
            request.toIndex = to
            _ = try await client.call(ItemServiceRPC.moveItem, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? "{\"from_index\": \(from), \"to_index\": \(to)}" : "moved \(from) → \(to)")
        }
    }

    static let statsParser = OptionParser(
        command: "item stats", summary: "Counts items and the deletes whose images the image service has not confirmed deleting.",
        usage: "homepwner item stats", options: CommonOptions.endpoints)

    static func stats(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(statsParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await withClient(options) { client, timeout in
            let stats = try await client.call(ItemServiceRPC.stats, ItemStatsRequest(), options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                print("{\"item_count\": \(stats.itemCount), \"pending_cascades\": \(stats.pendingCascades)}")
            } else {
                printColumns([["items", String(stats.itemCount)], ["pending cascades", String(stats.pendingCascades)]])
            }
        }
    }

    // MARK: Helpers

    static func withClient(
        _ options: ParsedOptions, _ body: (RPCClient, UInt32) async throws -> Void
    ) async -> Int32 {
        await CommonOptions.withClient(options, service: "item", command: "item", body)
    }

    /// A usage mistake in the arguments, printed as it is.
    struct UsageMistake: Error, CustomStringConvertible {
        let description: String
    }

    static func usage(_ message: String) -> UsageMistake {
        UsageMistake(description: message)
    }

    static func usageError(_ command: String, _ message: String) -> Int32 {
        printError("homepwner \(command): \(message) (see 'homepwner \(command) --help')")
        return ExitCode.usage
    }

    /// The seed's description: "Rusty Spork (4X7B): Worth $42, recorded on Nov 29, 2026".
    static func description(of item: Item) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "MMM d, yyyy"
        let date = Date(timeIntervalSince1970: Double(item.createdAtMs) / 1000)
        return "\(item.name) (\(item.serialNumber)): Worth $\(item.valueInDollars), recorded on \(formatter.string(from: date))"
    }

    /// The claim fields an item has, as rows for `printColumns` (names for keys).
    static func claimRows(_ item: Item, client: RPCClient, timeout: UInt32) async throws -> [[String]] {
        var rows: [[String]] = []
        if !item.locationKey.isEmpty {
            var get = GetLocationRequest()
            get.key = item.locationKey
            let path = (try? await client.call(ItemServiceRPC.getLocation, get, options: .init(timeoutMilliseconds: timeout)))?.path
            rows.append(["location", path ?? item.locationKey])
        }
        if item.quantity > 1 { rows.append(["quantity", String(item.quantity)]) }
        let texts: [(String, String)] = [
            ("brand", item.brand), ("model", item.model), ("purchased", item.purchaseDate),
            ("price", item.purchasePrice.map(amount) ?? ""),
            ("bought at", item.purchasePlace),
            ("replacement", item.replacementValue.map(amount) ?? ""),
            ("  source", item.replacementSource), ("  as of", item.replacementAsOf), ("warranty", item.warrantyExpires),
            ("tags", item.tags.joined(separator: ", ")), ("category", try await categoryName(item.categoryKey, client: client, timeout: timeout)),
        ]
        rows += texts.filter { !$0.1.isEmpty }.map { [$0.0, $0.1] }
        rows += item.customFields.map { [$0.name, $0.value] }
        if !item.notes.isEmpty { rows.append(["notes", item.notes.replacingOccurrences(of: "\n", with: "\n         ")]) }
        if let value = item.valuation {
            rows.append(["value as of", value.asOf])
            rows.append(["  RCV", value.replacementCost.map { $0.formatted() } ?? "-"])
            let age = value.ageMonths < 0 ? "age unknown" : "\(value.ageMonths) months old"
            rows.append(["  ACV", (value.actualCashValue.map { $0.formatted() } ?? "-") + " (\(value.remainingPercent) %, \(age))"])
        }
        return rows
    }

    /// The name of the category with `key` ('' for none; the key when it cannot be read).
    static func categoryName(_ key: String, client: RPCClient, timeout: UInt32) async throws -> String {
        guard !key.isEmpty else { return "" }
        let categories = try? await client.call(
            ItemServiceRPC.listCategories, ListCategoriesRequest(), options: .init(timeoutMilliseconds: timeout)
        ).categories
        return categories?.first { $0.key == key }?.name ?? key
    }

    /// An amount: with its symbol or code, or plain when in the policy's currency (unnamed).
    static func amount(_ money: Money) -> String {
        money.currency.isEmpty ? money.decimalText : money.formatted()
    }

    /// A photo role as people say it.
    static func roleName(_ role: PhotoRole) -> String {
        switch role {
        case .photo: "photo"
        case .serialPlate: "serial plate"
        case .receipt: "receipt"
        case .manual: "manual"
        case .damage: "damage"
        case .other: "other"
        default: "role \(role.rawValue)"
        }
    }

    /// "2026-11-29 16:27:10".
    static func timestamp(_ milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// An item as proto3 JSON with the .proto field names.
    static func itemJSON(_ item: Item) throws -> String {
        try ProtoJSON.decode(item.serializedBytes(), as: Item.protoName, options: .init(useProtoNames: true))
    }
}
