import CLISupport
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner thumbs batch|status`: thumbnails made in bulk (EnqueueThumbnails) and a batch's
/// progress, with a live progress bar.
enum ThumbsCommand {
    static let overview = """
        OVERVIEW: Make thumbnails in bulk and follow the batch.

        USAGE:
          homepwner thumbs batch (--missing | --all | KEY...) [--sizes 64,256] [--no-wait]
          homepwner thumbs status BATCH_ID [--watch]

        batch enqueues one job per image (EnqueueThumbnails) and, unless --no-wait, shows a
        progress bar (done/total, rate, time left) until the batch is done. The thumbnail
        workers make them: start more ('thumbnail-worker', or --scale in compose) to go faster.
        Every subcommand takes --image ENDPOINT, --timeout MS and --json.
        Exit codes: 0 ok, 2 usage, 3 invalid input, 4 an image or batch not found, 5 unavailable,
        \(ExitCode.deadJobs) the batch finished with dead jobs ('homepwner queue dead' lists them).
        """

    static let batchParser = OptionParser(
        command: "thumbs batch",
        summary: "Enqueues thumbnails for every image (--all), those missing a size (--missing) or the given images, "
            + "as one batch, then shows its progress until it is done.",
        usage: "homepwner thumbs batch (--missing | --all | KEY...) [--sizes 64,256] [--no-wait]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "all", help: "every JPEG, PNG and HEIC original and edit and every movie, every size made again", isFlag: true),
            OptionSpec(name: "missing", help: "only the sizes each image lacks (with KEYs: of those images; else of all)", isFlag: true),
            OptionSpec(name: "sizes", help: "longest edges in pixels, e.g. 64,256 (default: the image service's)", valueName: "N,N,…"),
            OptionSpec(name: "no-wait", help: "print the batch id and return at once", isFlag: true),
            QueueStall.option,
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        let thumbnails = JobQueueSpec.thumbnails.name
        return await runSubcommand(of: "thumbs", overview: overview, names: ["batch", "status"], arguments) { subcommand, rest in
            switch subcommand {
            case "batch": await batch(rest)
            // The batch view of `queue batch`, on the thumbnails queue.
            case "status": await QueueBatchCommand.run(rest.first == thumbnails ? rest : [thumbnails] + rest)
            default: nil
            }
        }
    }

    static func batch(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(batchParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        var request = EnqueueThumbnailsRequest()
        let keys = options.positionals
        switch (options.bool("all"), options.bool("missing"), keys.isEmpty) {
        case (true, _, false):
            return ItemCommand.usageError("thumbs batch", "give --all or KEYs, not both")
        case (true, true, _):
            return ItemCommand.usageError("thumbs batch", "give --all (every size again) or --missing (the sizes lacking), not both")
        case (false, false, true):
            return ItemCommand.usageError("thumbs batch", "say which images: --missing, --all or KEYs")
        default:
            request.keys = keys
            request.all = keys.isEmpty
            request.missingOnly = options.bool("missing")
        }
        if let sizes = options["sizes"] {
            guard let parsed = parseSizes(sizes) else {
                return ItemCommand.usageError("thumbs batch", "--sizes \"\(sizes)\" is not a list of pixel sizes like 64,256")
            }
            request.sizes = parsed
        }
        let wait = !options.bool("no-wait")
        guard let stall = QueueStall(queue: JobQueueSpec.thumbnails.name, options: options, command: "thumbs batch") else { return ExitCode.usage }
        return await CommonOptions.withClientExitCode(options, service: "image", command: "thumbs batch") { client, timeout in
            // A sweep of a large library pages through it: give the enqueue time.
            let enqueued = try await client.call(
                ImageServiceRPC.enqueueThumbnails, request, options: .init(timeoutMilliseconds: max(timeout, 120_000)))
            guard wait, !enqueued.batchId.isEmpty else {
                print(options.bool("json") ? try QueueCommand.json(enqueued) : summary(enqueued))
                return ExitCode.ok
            }
            if !options.bool("json") { print(summary(enqueued)) }
            var get = GetBatchRequest()
            get.queue = JobQueueSpec.thumbnails.name
            get.batchId = enqueued.batchId
            let batch = try await QueueBatchCommand.watch(get, client: client, timeout: timeout, stall: stall)
            if options.bool("json") {
                print("{\"enqueue\": \(try QueueCommand.json(enqueued)), \"batch\": \(try QueueCommand.json(batch))}")
            } else {
                printColumns(QueueBatchCommand.rows(batch))
            }
            return BatchProgress.exitCode(batch) ?? ExitCode.ok
        }
    }

    /// "64,256" as sizes; nil when a part is not a positive number (the service checks the range).
    static func parseSizes(_ text: String) -> [Int32]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let sizes = parts.compactMap { Int32($0) }
        return sizes.count == parts.count && sizes.allSatisfy({ $0 > 0 }) ? sizes : nil
    }

    /// What the enqueue did, in a line.
    static func summary(_ response: EnqueueThumbnailsResponse) -> String {
        let batch = response.batchId.isEmpty ? "no batch: nothing to make" : "batch \(response.batchId)"
        return "\(batch): \(QueueCommand.jobs(response.enqueued)) enqueued, \(response.alreadyPending) images already queued, "
            + "\(response.alreadyDone) with every size already"
    }
}
