import Foundation
import Proto
import RPC
import Runtime
import ZMQ

/// `homepwner image put|get|ls|stat|rm`: the image service for people (tables) and scripts (`--json`).
enum ImageCommand {
    static let subcommands: [(name: String, usage: String)] = [
        ("put", "image put FILE... [--owner KEY] [--kind original|edited|thumbnail] [--parent KEY] [--key UUID]"),
        ("get", "image get KEY -o FILE [--range A-B]   (bytes A through B, inclusive; A- = to the end)"),
        ("ls", "image ls [--owner KEY] [--kind K] [--media image|movie] [--limit N]"),
        ("stat", "image stat KEY"),
        ("rendition", "image rendition KEY --size WxH [--fill] -o FILE   (a JPEG at a size: fit, or --fill the box)"),
        ("rm", "image rm KEY | image rm --owner KEY   (an image and those made from it | all of an owner's)"),
    ]

    static var overview: String {
        "OVERVIEW: Puts, gets, renders, lists, describes and removes images and videos.\n\nUSAGE:\n"
            + subcommands.map { "  homepwner \($0.usage)" }.joined(separator: "\n")
            + "\n\nEvery subcommand takes --image ENDPOINT, --timeout MS and --json; see 'homepwner image SUBCOMMAND --help'.\n"
            + "Exit codes: 0 ok, 2 usage, 3 invalid input, 4 not found, 5 unavailable, 6 conflict."
    }

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "image", overview: overview, names: subcommands.map(\.name), arguments) { subcommand, rest in
            // The one short option: -o FILE.
            let rest = rest.map { $0 == "-o" ? "--output" : $0 }
            return switch subcommand {
            case "put", "add": await ImagePutCommand.run(rest)
            case "get": await ImageGetCommand.run(rest)
            case "ls", "list": await list(rest)
            case "stat", "show": await stat(rest)
            case "rendition", "thumb": await ImageRenditionCommand.run(rest)
            case "rm", "delete": await remove(rest)
            default: nil
            }
        }
    }

    // MARK: ls, stat, rm

    static let listParser = OptionParser(
        command: "image ls", summary: "Lists images in the order they were stored.",
        usage: "homepwner image ls [--owner KEY] [--kind original|edited|thumbnail] [--media image|movie] [--limit N]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "owner", help: "only this owner's images (an item key)", valueName: "KEY"),
            OptionSpec(name: "kind", help: "original, edited or thumbnail", valueName: "KIND"),
            OptionSpec(name: "media", help: "image, movie or document (a PDF)", valueName: "TYPE"),
            OptionSpec(name: "limit", defaultValue: "1000", help: "at most this many", valueName: "N"),
        ])

    static func list(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(listParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = ListImagesRequest()
        let limit: Int
        do {
            request.ownerKey = options["owner"] ?? ""
            if let kind = options["kind"] { request.kind = try parseKind(kind) }
            if let media = options["media"] {
                guard let value = ["image": MediaType.image, "movie": .movie, "video": .movie, "document": .document, "pdf": .document][
                    media.lowercased()]
                else {
                    throw OptionError.invalidValue(option: "--media", value: media, reason: "image, movie or document")
                }
                request.mediaType = value
            }
            limit = try options.int("limit")
            guard limit > 0 else { throw OptionError.invalidValue(option: "--limit", value: String(limit), reason: "must be ≥ 1") }
        } catch {
            return ItemCommand.usageError("image ls", "\(error)")
        }
        return await withClient(options) { client, timeout in
            var images: [ImageInfo] = []
            repeat {
                request.pageSize = Int32(min(1000, limit - images.count))
                let page = try await client.call(ImageServiceRPC.listImages, request, options: .init(timeoutMilliseconds: timeout))
                images += page.images
                request.pageToken = page.nextPageToken
            } while !request.pageToken.isEmpty && images.count < limit
            if options.bool("json") {
                print("[" + (try images.map(infoJSON).joined(separator: ",\n")) + "]")
                return
            }
            guard !images.isEmpty else {
                print("no images")
                return
            }
            printColumns([["KEY", "KIND", "TYPE", "SIZE", "PIXELS", "OWNER", "CREATED"]] + images.map { info in
                [info.key, info.kind.description, info.contentType, byteCount(info.sizeBytes),
                 info.width > 0 ? "\(info.width)×\(info.height)" : "-", info.ownerKey.isEmpty ? "-" : info.ownerKey,
                 ItemCommand.timestamp(info.createdAtMs)]
            })
        }
    }

    static let statParser = OptionParser(
        command: "image stat", summary: "Shows one image's metadata (StatImage).", usage: "homepwner image stat KEY",
        options: CommonOptions.endpoints, allowsPositionals: true)

    static func stat(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(statParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("image stat", "give exactly one KEY") }
        var request = StatImageRequest()
        request.key = options.positionals[0]
        return await withClient(options) { client, timeout in
            let info = try await client.call(ImageServiceRPC.statImage, request, options: .init(timeoutMilliseconds: timeout))
            print(options.bool("json") ? try infoJSON(info) : describe(info))
        }
    }

    static let removeParser = OptionParser(
        command: "image rm",
        summary: "Deletes an image and the images made from it (DeleteImage), or every image of an owner (DeleteImagesForOwner, --owner).",
        usage: "homepwner image rm KEY | homepwner image rm --owner KEY",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "owner", help: "delete every image of this owner (an item key) instead", valueName: "KEY"),
        ],
        allowsPositionals: true)

    static func remove(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(removeParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        if let owner = options["owner"] {
            guard options.positionals.isEmpty else { return ItemCommand.usageError("image rm", "give either KEY or --owner KEY, not both") }
            guard !owner.isEmpty else { return ItemCommand.usageError("image rm", "--owner needs a non-empty KEY") }
            return await removeOwned(by: owner, options)
        }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("image rm", "give exactly one KEY (or --owner KEY)") }
        var request = DeleteImageRequest()
        request.key = options.positionals[0]
        return await withClient(options) { client, timeout in
            _ = try await client.call(
                ImageServiceRPC.deleteImage, request,
                options: .init(timeoutMilliseconds: timeout, idempotencyKey: UUID().uuidString.lowercased()))
            print(options.bool("json") ? "{\"deleted\": \(jsonString(request.key))}" : "deleted \(request.key)")
        }
    }

    static func removeOwned(by owner: String, _ options: ParsedOptions) async -> Int32 {
        var request = DeleteImagesForOwnerRequest()
        request.ownerKey = owner
        return await withClient(options) { client, timeout in
            let response = try await client.call(
                ImageServiceRPC.deleteImagesForOwner, request,
                options: .init(timeoutMilliseconds: max(timeout, 60_000), idempotencyKey: UUID().uuidString.lowercased()))
            print(
                options.bool("json")
                    ? "{\"owner_key\": \(jsonString(owner)), \"deleted_count\": \(response.deletedCount)}"
                    : "deleted \(response.deletedCount) image\(response.deletedCount == 1 ? "" : "s") of \(owner)")
        }
    }

    // MARK: Helpers

    static func withClient(
        _ options: ParsedOptions, _ body: (RPCClient, UInt32) async throws -> Void
    ) async -> Int32 {
        await CommonOptions.withClient(options, service: "image", command: "image", body)
    }

    static func parseKind(_ text: String) throws -> ImageKind {
        guard let kind = ["original": ImageKind.original, "edited": .edited, "thumbnail": .thumbnail][text.lowercased()] else {
            throw OptionError.invalidValue(option: "--kind", value: text, reason: "original, edited or thumbnail")
        }
        return kind
    }

    /// ImageInfo as proto3 JSON with the .proto field names.
    static func infoJSON(_ info: ImageInfo) throws -> String {
        try ProtoJSON.decode(info.serializedBytes(), as: ImageInfo.protoName, options: .init(useProtoNames: true))
    }

    /// A few lines for people.
    static func describe(_ info: ImageInfo) -> String {
        var lines = [
            "key          \(info.key)",
            "kind         \(info.kind)\(info.parentKey.isEmpty ? "" : " of \(info.parentKey)")",
            "owner        \(info.ownerKey.isEmpty ? "-" : info.ownerKey)",
            "type         \(info.mediaType) \(info.contentType)",
            "size         \(byteCount(info.sizeBytes)) (\(info.sizeBytes) bytes)",
        ]
        if info.width > 0 { lines.append("pixels       \(info.width)×\(info.height), EXIF orientation \(info.orientation)") }
        lines.append("checksum     \(info.checksum)")
        lines.append("created      \(ItemCommand.timestamp(info.createdAtMs))")
        return lines.joined(separator: "\n")
    }

    /// "1.5 MB".
    static func byteCount(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes), unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
