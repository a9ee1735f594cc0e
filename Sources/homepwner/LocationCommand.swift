import Foundation
import Proto
import RPC
import Runtime

/// `homepwner location add|ls|show|mv|edit|rm`: the tree of places items are in.
enum LocationCommand {
    static let subcommands: [(name: String, usage: String)] = [
        ("add", "location add NAME [--in PARENT] [--kind home|floor|room|container|other] [--notes TEXT] [--key UUID]"),
        ("ls", "location ls [--root L]  (the tree, with item counts)"),
        ("show", "location show L"),
        ("mv", "location mv L --to PARENT | --top"),
        ("edit", "location edit L [--name N] [--kind K] [--notes TEXT] [--expect-version N]"),
        ("rm", "location rm L  (only an empty one)"),
    ]

    static var overview: String {
        "OVERVIEW: The places items are in: a home, its floors, rooms and containers, as a tree.\n\nUSAGE:\n"
            + subcommands.map { "  homepwner \($0.usage)" }.joined(separator: "\n")
            + "\n\nA location L is named by its path (\"Home/Kitchen\"), its name when no other has it, or its key.\n"
            + "Every subcommand takes --item ENDPOINT, --timeout MS and --json.\n"
            + "Exit codes: 0 ok, 2 usage, 3 invalid input or refused (a move under itself, a delete of a location that holds items), 4 not found, 5 unavailable, 6 conflict."
    }

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "location", overview: overview, names: subcommands.map(\.name), arguments) { subcommand, rest in
            switch subcommand {
            case "add": await add(rest)
            case "ls", "list": await list(rest)
            case "show", "get": await show(rest)
            case "mv", "move": await move(rest)
            case "edit": await edit(rest)
            case "rm", "delete": await remove(rest)
            default: nil
            }
        }
    }

    static let kindOption = OptionSpec(name: "kind", help: "home, floor, room, container or other", valueName: "K")

    static let addParser = OptionParser(
        command: "location add", summary: "Adds a location, at the top or inside another.",
        usage: "homepwner location add NAME [--in PARENT] [--kind K] [--notes TEXT] [--key UUID]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "in", help: "the enclosing location (path, name or key); none: at the top", valueName: "PARENT"),
            OptionSpec(name: "kind", defaultValue: "room", help: "home, floor, room, container or other", valueName: "K"),
            OptionSpec(name: "notes", help: "notes", valueName: "TEXT"),
            OptionSpec(name: "key", help: "a UUID of your choosing: adding it again returns the first location", valueName: "UUID"),
        ],
        allowsPositionals: true)

    static func add(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(addParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = CreateLocationRequest()
        do {
            guard options.positionals.count == 1 else { throw ItemCommand.usage("expected one NAME (quote a name with spaces)") }
            request.name = options.positionals[0]
            request.kind = try kind(try options.string("kind"))
            request.notes = options["notes"] ?? ""
            request.key = options["key"] ?? ""
        } catch {
            printError("homepwner location add: \(error)")
            return ExitCode.usage
        }
        return await withClient(options) { client, timeout in
            var request = request
            if let parent = options["in"], !parent.isEmpty {
                request.parentKey = try await InventoryLookup.location(parent, client: client, timeout: timeout).key
            }
            let location = try await client.call(ItemServiceRPC.createLocation, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try json(location) : "added \(location.path) (\(kindName(location.kind))) \(location.key)")
        }
    }

    static let listParser = OptionParser(
        command: "location ls", summary: "Prints the tree of locations with the items in each (and below it).",
        usage: "homepwner location ls [--root L]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "root", help: "only this location and what is inside it", valueName: "L")
        ])

    static func list(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(listParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await withClient(options) { client, timeout in
            var request = ListLocationsRequest()
            if let root = options["root"] { request.rootKey = try await InventoryLookup.location(root, client: client, timeout: timeout).key }
            let response = try await client.call(ItemServiceRPC.listLocations, request, options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                print(try ProtoJSON.decode(response.serializedBytes(), as: ListLocationsResponse.protoName, options: .init(useProtoNames: true)))
                return
            }
            guard !response.locations.isEmpty else {
                print("no locations yet; add one with 'homepwner location add Home --kind home'")
                return
            }
            let base = response.locations.first?.depth ?? 0
            var rows = [["LOCATION", "KIND", "HERE", "IN ALL", "KEY"]]
            for location in response.locations {
                let indent = String(repeating: "  ", count: Int(location.depth - base))
                rows.append([
                    indent + location.name, kindName(location.kind), String(location.itemCount), String(location.subtreeItemCount), location.key,
                ])
            }
            printColumns(rows)
            if request.rootKey.isEmpty { print("\(response.unplacedItemCount) item(s) in no location") }
        }
    }

    static let showParser = OptionParser(
        command: "location show", summary: "Prints one location.", usage: "homepwner location show L",
        options: CommonOptions.endpoints, allowsPositionals: true)

    static func show(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(showParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("location show", "expected one location") }
        return await withClient(options) { client, timeout in
            let location = try await InventoryLookup.location(options.positionals[0], client: client, timeout: timeout)
            if options.bool("json") { return print(try json(location)) }
            printColumns([
                ["path", location.path], ["kind", kindName(location.kind)], ["key", location.key],
                ["items here", String(location.itemCount)], ["items in all", String(location.subtreeItemCount)],
                ["version", String(location.version)], ["notes", location.notes],
            ])
        }
    }

    static let moveParser = OptionParser(
        command: "location mv", summary: "Moves a location (with everything in it) into another, or to the top.",
        usage: "homepwner location mv L --to PARENT | --top",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "to", help: "the new enclosing location", valueName: "PARENT"),
            OptionSpec(name: "top", help: "move it to the top level", isFlag: true),
        ],
        allowsPositionals: true)

    static func move(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(moveParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("location mv", "expected one location to move") }
        guard (options["to"] != nil) != options.bool("top") else {
            return ItemCommand.usageError("location mv", "give either --to PARENT or --top")
        }
        return await withClient(options) { client, timeout in
            let location = try await InventoryLookup.location(options.positionals[0], client: client, timeout: timeout)
            var request = UpdateLocationRequest()
            request.key = location.key
            request.updateMask = ["parent_key"]
            if let parent = options["to"] { request.parentKey = try await InventoryLookup.location(parent, client: client, timeout: timeout).key }
            let moved = try await client.call(ItemServiceRPC.updateLocation, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try json(moved) : "moved \(location.path) → \(moved.path)")
        }
    }

    static let editParser = OptionParser(
        command: "location edit", summary: "Renames a location or changes its kind or notes.",
        usage: "homepwner location edit L [--name N] [--kind K] [--notes TEXT] [--expect-version N]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "name", help: "new name", valueName: "N"), kindOption,
            OptionSpec(name: "notes", help: "new notes (\"\" clears them)", valueName: "TEXT"),
            OptionSpec(name: "expect-version", help: "refuse (exit 6) unless it is at this version", valueName: "N"),
        ],
        allowsPositionals: true)

    static func edit(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(editParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = UpdateLocationRequest()
        do {
            guard options.positionals.count == 1 else { throw ItemCommand.usage("expected one location") }
            if let name = options["name"] {
                request.updateMask.append("name")
                request.name = name
            }
            if let kind = options["kind"] {
                request.updateMask.append("kind")
                request.kind = try self.kind(kind)
            }
            if let notes = options["notes"] {
                request.updateMask.append("notes")
                request.notes = notes
            }
            if options["expect-version"] != nil { request.expectedVersion = Int64(try options.int("expect-version")) }
            guard !request.updateMask.isEmpty else { throw ItemCommand.usage("nothing to change: give --name, --kind or --notes") }
        } catch {
            printError("homepwner location edit: \(error)")
            return ExitCode.usage
        }
        return await withClient(options) { client, timeout in
            var request = request
            request.key = try await InventoryLookup.location(options.positionals[0], client: client, timeout: timeout).key
            let location = try await client.call(ItemServiceRPC.updateLocation, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try json(location) : "\(location.path) (\(kindName(location.kind))), version \(location.version)")
        }
    }

    static let removeParser = OptionParser(
        command: "location rm", summary: "Deletes a location that holds no items and no other locations.",
        usage: "homepwner location rm L", options: CommonOptions.endpoints, allowsPositionals: true)

    static func remove(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(removeParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("location rm", "expected one location") }
        return await withClient(options) { client, timeout in
            let location = try await InventoryLookup.location(options.positionals[0], client: client, timeout: timeout)
            var request = DeleteLocationRequest()
            request.key = location.key
            _ = try await client.call(ItemServiceRPC.deleteLocation, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? "{\"deleted\": \(jsonString(location.key))}" : "deleted \(location.path)")
        }
    }

    // MARK: Helpers

    static func withClient(_ options: ParsedOptions, _ body: (RPCClient, UInt32) async throws -> Void) async -> Int32 {
        await CommonOptions.withClient(options, service: "item", command: "location", body)
    }

    static func kind(_ text: String) throws -> LocationKind {
        switch text.lowercased() {
        case "home", "house": return .home
        case "floor", "level": return .floor
        case "room": return .room
        case "container", "box", "cupboard": return .container
        case "other": return .other
        default: throw OptionError.invalidValue(option: "--kind", value: text, reason: "one of home, floor, room, container, other")
        }
    }

    static func kindName(_ kind: LocationKind) -> String {
        switch kind {
        case .home: "home"
        case .floor: "floor"
        case .room: "room"
        case .container: "container"
        default: "other"
        }
    }

    static func json(_ location: Location) throws -> String {
        try ProtoJSON.decode(location.serializedBytes(), as: Location.protoName, options: .init(useProtoNames: true))
    }
}
