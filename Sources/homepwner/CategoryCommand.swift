import Foundation
import Proto
import RPC
import Runtime

/// `homepwner category add|ls|edit|rm` and `homepwner policy show|set`: how items are covered.
enum CategoryCommand {
    static let subcommands: [(name: String, usage: String)] = [
        ("add", "category add NAME [--life YEARS [--floor PERCENT]] [--limit AMOUNT] [--key UUID]"),
        ("ls", "category ls"),
        ("edit", "category edit C [--name N] [--life YEARS | --no-depreciation] [--floor PERCENT] [--limit AMOUNT]"),
        ("rm", "category rm C  (only one no item is in)"),
    ]

    static var overview: String {
        "OVERVIEW: Coverage categories: how their items depreciate (straight line over a life, down to a floor) and their limits.\n\nUSAGE:\n"
            + subcommands.map { "  homepwner \($0.usage)" }.joined(separator: "\n")
            + "\n\nWithout --life a category's items keep their value (collectibles, jewellery). A category C is named by its name or key.\n"
            + "Every subcommand takes --item ENDPOINT, --timeout MS and --json.\n"
            + "Exit codes: 0 ok, 2 usage, 3 invalid input or refused, 4 not found, 5 unavailable, 6 conflict."
    }

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "category", overview: overview, names: subcommands.map(\.name), arguments) { subcommand, rest in
            switch subcommand {
            case "add": await add(rest)
            case "ls", "list": await list(rest)
            case "edit": await edit(rest)
            case "rm", "delete": await remove(rest)
            default: nil
            }
        }
    }

    static let ruleOptions = [
        OptionSpec(name: "life", help: "useful life in years: straight-line depreciation over it", valueName: "YEARS"),
        OptionSpec(name: "floor", help: "what is left at the end of the life, in percent (default 0)", valueName: "PERCENT"),
        OptionSpec(name: "limit", help: "the policy's sub-limit for the category, e.g. 10000 or \"10000 EUR\"", valueName: "AMOUNT"),
    ]

    static let addParser = OptionParser(
        command: "category add", summary: "Adds a coverage category.",
        usage: "homepwner category add NAME [--life YEARS [--floor PERCENT]] [--limit AMOUNT] [--key UUID]",
        options: CommonOptions.endpoints + ruleOptions + [
            OptionSpec(name: "key", help: "a UUID of your choosing: adding it again returns the first category", valueName: "UUID")
        ],
        allowsPositionals: true)

    static func add(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(addParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = CreateCategoryRequest()
        do {
            guard options.positionals.count == 1 else { throw ItemCommand.usage("expected one NAME") }
            request.name = options.positionals[0]
            request.key = options["key"] ?? ""
            if options["life"] != nil {
                request.depreciation = .straightLine
                request.usefulLifeYears = Int32(clamping: try options.int("life"))
            }
            if options["floor"] != nil {
                guard options["life"] != nil else { throw ItemCommand.usage("--floor needs --life") }
                request.floorPercent = Int32(clamping: try options.int("floor"))
            }
            if let limit = options["limit"] { request.limit = try ClaimFlags.money(limit, flag: "--limit") }
        } catch {
            printError("homepwner category add: \(error)")
            return ExitCode.usage
        }
        return await withClient(options) { client, timeout in
            let category = try await client.call(ItemServiceRPC.createCategory, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try json(category) : "added category \(category.name): \(rule(category)) \(category.key)")
        }
    }

    static let listParser = OptionParser(
        command: "category ls", summary: "Lists the categories with their rules, limits and item counts.",
        usage: "homepwner category ls", options: CommonOptions.endpoints)

    static func list(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(listParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await withClient(options) { client, timeout in
            let response = try await client.call(ItemServiceRPC.listCategories, ListCategoriesRequest(), options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                return print(
                    try ProtoJSON.decode(response.serializedBytes(), as: ListCategoriesResponse.protoName, options: .init(useProtoNames: true)))
            }
            guard !response.categories.isEmpty else {
                return print("no categories yet; add one with 'homepwner category add Electronics --life 5 --floor 20'")
            }
            printColumns(
                [["CATEGORY", "DEPRECIATION", "LIMIT", "ITEMS", "KEY"]]
                    + response.categories.map { [$0.name, rule($0), $0.limit.map(ItemCommand.amount) ?? "-", String($0.itemCount), $0.key] })
        }
    }

    static let editParser = OptionParser(
        command: "category edit", summary: "Changes a category's name, depreciation or limit.",
        usage: "homepwner category edit C [--name N] [--life YEARS | --no-depreciation] [--floor PERCENT] [--limit AMOUNT]",
        options: CommonOptions.endpoints + ruleOptions + [
            OptionSpec(name: "name", help: "new name", valueName: "N"),
            OptionSpec(name: "no-depreciation", help: "its items keep their value", isFlag: true),
        ],
        allowsPositionals: true)

    static func edit(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(editParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = UpdateCategoryRequest()
        do {
            guard options.positionals.count == 1 else { throw ItemCommand.usage("expected one category") }
            if let name = options["name"] {
                request.updateMask.append("name")
                request.name = name
            }
            if options.bool("no-depreciation") {
                guard options["life"] == nil && options["floor"] == nil else { throw ItemCommand.usage("--no-depreciation takes no --life or --floor") }
                request.updateMask.append("depreciation")
                request.depreciation = .none
            }
            if options["life"] != nil {
                request.updateMask += ["depreciation", "useful_life_years"]
                request.depreciation = .straightLine
                request.usefulLifeYears = Int32(clamping: try options.int("life"))
            }
            if options["floor"] != nil {
                request.updateMask.append("floor_percent")
                request.floorPercent = Int32(clamping: try options.int("floor"))
            }
            if let limit = options["limit"] {
                request.updateMask.append("limit")
                request.limit = try ClaimFlags.money(limit, flag: "--limit")
            }
            guard !request.updateMask.isEmpty else { throw ItemCommand.usage("nothing to change: give --name, --life, --floor, --no-depreciation or --limit") }
        } catch {
            printError("homepwner category edit: \(error)")
            return ExitCode.usage
        }
        return await withClient(options) { client, timeout in
            var request = request
            request.key = try await InventoryLookup.category(options.positionals[0], client: client, timeout: timeout).key
            let category = try await client.call(ItemServiceRPC.updateCategory, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try json(category) : "category \(category.name): \(rule(category)), version \(category.version)")
        }
    }

    static let removeParser = OptionParser(
        command: "category rm", summary: "Deletes a category no item is in.", usage: "homepwner category rm C",
        options: CommonOptions.endpoints, allowsPositionals: true)

    static func remove(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(removeParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("category rm", "expected one category") }
        return await withClient(options) { client, timeout in
            let category = try await InventoryLookup.category(options.positionals[0], client: client, timeout: timeout)
            var request = DeleteCategoryRequest()
            request.key = category.key
            _ = try await client.call(ItemServiceRPC.deleteCategory, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? "{\"deleted\": \(jsonString(category.key))}" : "deleted category \(category.name)")
        }
    }

    // MARK: Helpers

    static func withClient(_ options: ParsedOptions, _ body: (RPCClient, UInt32) async throws -> Void) async -> Int32 {
        await CommonOptions.withClient(options, service: "item", command: "category", body)
    }

    /// "straight line over 5 years down to 20 %", or "keeps its value".
    static func rule(_ category: Category) -> String {
        category.depreciation == .straightLine
            ? "straight line over \(category.usefulLifeYears) years down to \(category.floorPercent) %" : "keeps its value"
    }

    static func json(_ category: Category) throws -> String {
        try ProtoJSON.decode(category.serializedBytes(), as: Category.protoName, options: .init(useProtoNames: true))
    }
}

/// `homepwner policy show|set`: the policy the inventory is kept for.
enum PolicyCommand {
    static let overview = """
        OVERVIEW: The insurance policy: its currency, its contents limit, when to warn, and the claim packet's cover.

        USAGE:
          homepwner policy show
          homepwner policy set [--currency CODE] [--limit AMOUNT] [--warn-at PERCENT] [--holder NAME] [--insurer NAME] [--number N] [--address TEXT]

        Every subcommand takes --item ENDPOINT, --timeout MS and --json.
        """

    static let setOptions = [
        OptionSpec(name: "currency", help: "ISO 4217 code of valuations and limits, e.g. EUR", valueName: "CODE"),
        OptionSpec(name: "limit", help: "the policy's limit for all contents (\"\" or 0: none)", valueName: "AMOUNT"),
        OptionSpec(name: "warn-at", help: "warn when a total reaches this share of its limit (default 80)", valueName: "PERCENT"),
        OptionSpec(name: "holder", help: "policyholder", valueName: "NAME"),
        OptionSpec(name: "insurer", help: "insurer", valueName: "NAME"),
        OptionSpec(name: "number", help: "policy number", valueName: "N"),
        OptionSpec(name: "address", help: "the insured address", valueName: "TEXT"),
    ]

    static let showParser = OptionParser(
        command: "policy show", summary: "Prints the policy.", usage: "homepwner policy show", options: CommonOptions.endpoints)
    static let setParser = OptionParser(
        command: "policy set", summary: "Changes the policy's given fields (the others stay).",
        usage: "homepwner policy set [--currency CODE] [--limit AMOUNT] [--warn-at PERCENT] [--holder NAME] [--insurer NAME] [--number N] [--address TEXT]",
        options: CommonOptions.endpoints + setOptions)

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "policy", overview: overview, names: ["show", "set"], arguments) { subcommand, rest in
            switch subcommand {
            case "show", "get": await show(rest, parser: showParser, change: false)
            case "set": await show(rest, parser: setParser, change: true)
            default: nil
            }
        }
    }

    static func show(_ arguments: [String], parser: OptionParser, change: Bool) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = UpdatePolicyRequest()
        var policy = Policy()
        if change {
            do {
                let texts: [(String, String, WritableKeyPath<Policy, String>)] = [
                    ("currency", "currency", \.currency), ("holder", "policyholder", \.policyholder), ("insurer", "insurer", \.insurer),
                    ("number", "policy_number", \.policyNumber), ("address", "address", \.address),
                ]
                for (flag, field, keyPath) in texts {
                    guard let text = options[flag] else { continue }
                    policy[keyPath: keyPath] = text
                    request.updateMask.append(field)
                }
                if let limit = options["limit"] {
                    policy.contentsLimit = limit.isEmpty ? nil : try ClaimFlags.money(limit, flag: "--limit")
                    request.updateMask.append("contents_limit")
                }
                if options["warn-at"] != nil {
                    policy.warnAtPercent = Int32(clamping: try options.int("warn-at"))
                    request.updateMask.append("warn_at_percent")
                }
                guard !request.updateMask.isEmpty else { throw ItemCommand.usage("nothing to change (see 'homepwner policy set --help')") }
            } catch {
                printError("homepwner policy set: \(error)")
                return ExitCode.usage
            }
            request.policy = policy
        }
        let update = request
        return await CommonOptions.withClient(options, service: "item", command: "policy") { client, timeout in
            let policy =
                change
                ? try await client.call(ItemServiceRPC.updatePolicy, update, options: .init(timeoutMilliseconds: timeout))
                : try await client.call(ItemServiceRPC.getPolicy, GetPolicyRequest(), options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                return print(try ProtoJSON.decode(policy.serializedBytes(), as: Policy.protoName, options: .init(useProtoNames: true)))
            }
            printColumns([
                ["currency", policy.currency], ["contents limit", policy.contentsLimit.map { $0.formatted(defaultCurrency: policy.currency) } ?? "none"],
                ["warn at", "\(policy.warnAtPercent) % of a limit"], ["policyholder", policy.policyholder], ["insurer", policy.insurer],
                ["policy number", policy.policyNumber], ["address", policy.address], ["version", String(policy.version)],
            ])
        }
    }
}
