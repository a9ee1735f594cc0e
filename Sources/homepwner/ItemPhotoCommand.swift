import Foundation
import Proto
import RPC
import Runtime

/// `homepwner item photo add|rm|primary|order ITEM …`: AttachPhoto, DetachPhoto,
/// SetPrimaryPhoto and ReorderPhotos, printing the item's photos after the change.
enum ItemPhotoCommand {
    static let overview = """
        OVERVIEW: Attaches, detaches, orders and picks the primary photo of an item.

        USAGE:
          homepwner item photo add ITEM IMAGE [--primary] [--role R]   attach a stored image (of the item or of no owner)
          homepwner item photo role ITEM IMAGE ROLE          say what it shows: photo, serial-plate, receipt, manual, damage, other
          homepwner item photo rm ITEM IMAGE                 detach it (a detached primary is replaced by the first photo)
          homepwner item photo primary ITEM IMAGE            make an attached photo the primary one
          homepwner item photo order ITEM IMAGE...           put the photos in this order (every attached photo once)

        To store and attach a photo in one step, use 'homepwner capture ITEM --file F'.
        Every subcommand takes --item ENDPOINT, --timeout MS and --json.
        Exit codes: 0 ok, 2 usage, 3 invalid input, 4 item or photo not found, 5 unavailable.
        """

    static func parser(_ name: String, _ summary: String, _ usage: String, primary: Bool = false) -> OptionParser {
        OptionParser(
            command: "item photo \(name)", summary: summary, usage: "homepwner item photo \(usage)",
            options: CommonOptions.endpoints
                + (primary
                    ? [
                        OptionSpec(name: "primary", help: "also make it the primary photo", isFlag: true),
                        OptionSpec(name: "role", help: "what it shows: photo, serial-plate, receipt, manual, damage, other", valueName: "R"),
                    ] : []),
            allowsPositionals: true)
    }

    static let roleParser = parser("role", "Says what an attached photo shows (a receipt, the serial plate, ...).", "role ITEM IMAGE ROLE")

    /// A role as typed.
    static func role(_ text: String) throws -> PhotoRole {
        switch text.lowercased().replacingOccurrences(of: "_", with: "-") {
        case "photo": return .photo
        case "serial-plate", "serial", "plate": return .serialPlate
        case "receipt": return .receipt
        case "manual": return .manual
        case "damage": return .damage
        case "other": return .other
        default:
            throw RPCError(.invalidArgument, "role \"\(text)\" is not one of photo, serial-plate, receipt, manual, damage, other")
        }
    }

    static let addParser = parser("add", "Attaches a stored image to an item (the first attached photo is primary).", "add ITEM IMAGE [--primary]", primary: true)
    static let removeParser = parser("rm", "Detaches a photo from an item; the image itself stays stored.", "rm ITEM IMAGE")
    static let primaryParser = parser("primary", "Makes an attached photo the item's primary photo.", "primary ITEM IMAGE")
    static let orderParser = parser("order", "Puts an item's photos in the order given (each attached photo once).", "order ITEM IMAGE...")

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "item photo", overview: overview, names: ["add", "rm", "primary", "order", "role"], arguments) { subcommand, rest in
            switch subcommand {
            case "add": await change(addParser, rest, count: 2) { client, keys, options, timeout in
                var request = AttachPhotoRequest()
                request.itemKey = keys[0]
                request.imageKey = keys[1]
                request.makePrimary = options.bool("primary")
                if let role = options["role"] { request.role = try Self.role(role) }
                return try await client.call(ItemServiceRPC.attachPhoto, request, options: .init(timeoutMilliseconds: timeout))
            }
            case "role": await change(roleParser, rest, count: 3) { client, keys, _, timeout in
                var request = SetPhotoRoleRequest()
                request.itemKey = keys[0]
                request.imageKey = keys[1]
                request.role = try Self.role(keys[2])
                return try await client.call(ItemServiceRPC.setPhotoRole, request, options: .init(timeoutMilliseconds: timeout))
            }
            case "rm", "remove": await change(removeParser, rest, count: 2) { client, keys, _, timeout in
                var request = DetachPhotoRequest()
                request.itemKey = keys[0]
                request.imageKey = keys[1]
                return try await client.call(ItemServiceRPC.detachPhoto, request, options: .init(timeoutMilliseconds: timeout))
            }
            case "primary": await change(primaryParser, rest, count: 2) { client, keys, _, timeout in
                var request = SetPrimaryPhotoRequest()
                request.itemKey = keys[0]
                request.imageKey = keys[1]
                return try await client.call(ItemServiceRPC.setPrimaryPhoto, request, options: .init(timeoutMilliseconds: timeout))
            }
            case "order": await change(orderParser, rest, count: nil) { client, keys, _, timeout in
                var request = ReorderPhotosRequest()
                request.itemKey = keys[0]
                request.imageKeys = Array(keys.dropFirst())
                return try await client.call(ItemServiceRPC.reorderPhotos, request, options: .init(timeoutMilliseconds: timeout))
            }
            default: nil
            }
        }
    }

    /// Parses ITEM and the image keys (`count` in all, or at least 2), calls, prints the photos.
    static func change(
        _ parser: OptionParser, _ arguments: [String], count: Int?,
        _ call: @escaping (RPCClient, [String], ParsedOptions, UInt32) async throws -> Item
    ) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let keys = options.positionals
        guard count.map({ keys.count == $0 }) ?? (keys.count >= 2) else {
            return ItemCommand.usageError(
                parser.command,
                count == nil ? "expected ITEM and the IMAGE keys in their new order" : count == 3 ? "expected ITEM IMAGE ROLE" : "expected ITEM and IMAGE")
        }
        return await ItemCommand.withClient(options) { client, timeout in
            let item = try await call(client, keys, options, timeout)
            if options.bool("json") { return print(try ItemCommand.itemJSON(item)) }
            print("item \(item.key), version \(item.version): " + (item.photoKeys.isEmpty ? "no photos" : "\(item.photoKeys.count) photo(s)"))
            for photo in item.photos {
                print(
                    "  " + photo.imageKey + (photo.role == .photo ? "" : " (\(ItemCommand.roleName(photo.role)))")
                        + (photo.imageKey == item.primaryPhotoKey ? " (primary)" : ""))
            }
        }
    }
}
