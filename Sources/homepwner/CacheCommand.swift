import Foundation
import Proto
import RPC
import Runtime

/// `homepwner cache stats|purge [--critical]`: the image service's memory cache.
enum CacheCommand {
    static let overview = """
        OVERVIEW: The image service's memory cache.

        USAGE:
          homepwner cache stats                     entries, bytes, budget, hits, misses, evictions, purges
          homepwner cache purge [--warning|--critical]   shrink to half (warning) or empty it (critical, the default)

        Every subcommand takes --image ENDPOINT, --timeout MS and --json.
        """

    static let statsParser = OptionParser(
        command: "cache stats", summary: "Shows the image cache's counters (CacheStats).", usage: "homepwner cache stats",
        options: CommonOptions.endpoints)

    static let purgeParser = OptionParser(
        command: "cache purge", summary: "Purges the image cache like a memory warning (PurgeCache).",
        usage: "homepwner cache purge [--warning|--critical]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "critical", help: "empty the cache (the default)", isFlag: true),
            OptionSpec(name: "warning", help: "shrink the cache to half its budget", isFlag: true),
        ])

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "cache", overview: overview, names: ["stats", "purge"], arguments) { subcommand, rest in
            switch subcommand {
            case "stats": await stats(rest)
            case "purge": await purge(rest)
            default: nil
            }
        }
    }

    static func stats(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(statsParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await ImageCommand.withClient(options) { client, timeout in
            let stats = try await client.call(ImageServiceRPC.cacheStats, CacheStatsRequest(), options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                print(try ProtoJSON.decode(stats.serializedBytes(), as: CacheStatsResponse.protoName, options: .init(useProtoNames: true)))
                return
            }
            let lookups = stats.hits + stats.misses
            let rate = lookups == 0 ? "-" : String(format: "%.1f%%", Double(stats.hits) * 100 / Double(lookups))
            printColumns([
                ["entries", String(stats.entries)],
                ["bytes", "\(ImageCommand.byteCount(stats.bytes)) (\(stats.bytes))"],
                ["budget", "\(ImageCommand.byteCount(stats.budgetBytes)) (\(stats.budgetBytes))"],
                ["hits", String(stats.hits)],
                ["misses", String(stats.misses)],
                ["hit rate", rate],
                ["evictions", String(stats.evictions)],
                ["purges", stats.purges.isEmpty ? "none" : stats.purges.map { "\($0.reason) \($0.count)" }.joined(separator: ", ")],
            ])
        }
    }

    static func purge(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(purgeParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard !(options.bool("warning") && options.bool("critical")) else {
            return ItemCommand.usageError("cache purge", "give --warning or --critical, not both")
        }
        var request = PurgeCacheRequest()
        request.level = options.bool("warning") ? .warning : .critical
        return await ImageCommand.withClient(options) { client, timeout in
            let result = try await client.call(
                ImageServiceRPC.purgeCache, request,
                options: .init(timeoutMilliseconds: timeout, idempotencyKey: UUID().uuidString.lowercased()))
            if options.bool("json") {
                print(try ProtoJSON.decode(result.serializedBytes(), as: PurgeCacheResponse.protoName, options: .init(useProtoNames: true)))
            } else {
                print("freed \(ImageCommand.byteCount(result.freedBytes)); \(result.entries) entries, \(ImageCommand.byteCount(result.bytes)) left")
            }
        }
    }
}
