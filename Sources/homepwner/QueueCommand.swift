import CLISupport
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner queue stats|ls|dead|show|retry|pause|resume|purge|batch`: a job queue's admin
/// (the JobQueue methods) on the process that serves the queue, for people and scripts (`--json`).
enum QueueCommand {
    static let defaultQueue = JobQueueSpec.thumbnails.name

    static let subcommands: [(name: String, usage: String)] = [
        ("stats", "queue stats [QUEUE]   (ready, scheduled, leased, done, dead, oldest ready age, paused)"),
        ("ls", "queue ls [QUEUE] [--state queued|running|done|dead] [--limit N]   (default: every state)"),
        ("dead", "queue dead [QUEUE] [--limit N]   (dead jobs, each with every attempt's error)"),
        ("show", "queue show [QUEUE] JOB_ID   (every field, the errors, the payload and result decoded)"),
        ("retry", "queue retry [QUEUE] [JOB_ID...]   (requeue these dead jobs, or every dead one)"),
        ("pause", "queue pause [QUEUE]   (Lease gives out no jobs; running jobs finish)"),
        ("resume", "queue resume [QUEUE]"),
        ("purge", "queue purge [QUEUE] --state done|dead [--older-than DURATION] [--yes]"),
        ("batch", "queue batch [QUEUE] BATCH_ID [--watch]   (a batch's progress; --watch until it is done)"),
    ]

    static var overview: String {
        "OVERVIEW: A job queue's counts, jobs, dead jobs, pause, purge and batches (JobQueue).\n\nUSAGE:\n"
            + subcommands.map { "  homepwner \($0.usage)" }.joined(separator: "\n")
            + "\n\nQUEUE is thumbnails (image-service, the default), cascade or capture (item-service), as the first argument or\n"
            + "--queue NAME. Every subcommand takes --item/--image ENDPOINT, --timeout MS and --json;\n"
            + "see 'homepwner queue SUBCOMMAND --help'.\n"
            + "Exit codes: 0 ok, 2 usage, 3 invalid input, 4 not found (a job, a batch, or a queue not served),\n"
            + "5 unavailable, \(ExitCode.deadJobs) a watched batch finished with dead jobs."
    }

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "queue", overview: overview, names: subcommands.map(\.name), arguments) { subcommand, rest in
            switch subcommand {
            case "stats": await stats(rest)
            case "ls", "list": await QueueJobsCommand.list(rest)
            case "dead": await QueueJobsCommand.dead(rest)
            case "show", "get": await QueueJobsCommand.show(rest)
            case "retry": await retry(rest)
            case "pause": await setPaused(rest, paused: true)
            case "resume": await setPaused(rest, paused: false)
            case "purge": await purge(rest)
            case "batch": await QueueBatchCommand.run(rest)
            default: nil
            }
        }
    }

    // MARK: stats, retry, pause, resume, purge

    static let statsParser = parser("stats", "Shows a queue's counts (Stats).")

    static func stats(_ arguments: [String]) async -> Int32 {
        guard let call = invocation(statsParser, arguments, expected: "expected at most one QUEUE") else { return HomepwnerCLI.exitCodeOverride }
        var request = JobStatsRequest()
        request.queue = call.queue
        return await call.withClient { client, timeout in
            let stats = try await client.call(JobQueueRPC.stats, request, options: .init(timeoutMilliseconds: timeout))
            if call.json {
                print(try json(stats))
                return
            }
            printColumns([
                ["queue", call.queue],
                ["ready", String(stats.ready)],
                ["scheduled", String(stats.scheduled)],
                ["leased", String(stats.leased)],
                ["done", String(stats.done)],
                ["dead", String(stats.dead)],
                ["oldest ready", stats.ready == 0 ? "-" : HumanDuration.text(milliseconds: stats.oldestReadyAgeMs)],
                ["paused", stats.paused ? "yes (Lease gives out no jobs; 'homepwner queue resume' undoes it)" : "no"],
                ["done retention", HumanDuration.text(milliseconds: stats.doneRetentionMs)],
            ])
        }
    }

    static let retryParser = parser("retry", "Puts dead jobs back in the queue, ready now, their history kept (RetryDead).")

    static func retry(_ arguments: [String]) async -> Int32 {
        // Job ids are numbers, so a first argument that is not one is the queue.
        guard let call = invocation(retryParser, arguments, expected: "", leadingQueue: { !isJobNumber($0[0]) }, accepts: { _ in true })
        else { return HomepwnerCLI.exitCodeOverride }
        var request = RetryDeadRequest()
        request.queue = call.queue
        request.jobIds = call.arguments
        request.all = call.arguments.isEmpty
        return await call.withClient { client, timeout in
            let response = try await client.call(JobQueueRPC.retryDead, request, options: .init(timeoutMilliseconds: timeout))
            if call.json {
                print(try json(response))
            } else if request.all {
                print("requeued \(jobs(response.requeued)) of \(call.queue)")
            } else {
                let skipped = Int64(request.jobIds.count) - response.requeued
                print("requeued \(response.requeued) of the \(jobs(Int64(request.jobIds.count))) given"
                    + (skipped > 0 ? " (\(skipped) not DEAD, or a pending job has its dedupe key)" : ""))
            }
        }
    }

    static let pauseParser = parser("pause", "Pauses a queue: Lease gives out no jobs, running jobs finish; survives restarts (PauseQueue).")
    static let resumeParser = parser("resume", "Resumes a paused queue and wakes the workers waiting on Lease (PauseQueue).")

    static func setPaused(_ arguments: [String], paused: Bool) async -> Int32 {
        guard let call = invocation(paused ? pauseParser : resumeParser, arguments, expected: "expected at most one QUEUE")
        else { return HomepwnerCLI.exitCodeOverride }
        var request = PauseQueueRequest()
        request.queue = call.queue
        request.paused = paused
        return await call.withClient { client, timeout in
            let response = try await client.call(JobQueueRPC.pauseQueue, request, options: .init(timeoutMilliseconds: timeout))
            print(call.json ? try json(response) : "queue \(call.queue) \(response.paused ? "paused" : "resumed")")
        }
    }

    static let purgeParser = parser(
        "purge", "Removes DONE or DEAD jobs with their history (PurgeJobs); QUEUED and RUNNING jobs are never purged.",
        [
            OptionSpec(name: "state", help: "done or dead (required)", valueName: "STATE"),
            OptionSpec(name: "older-than", help: "only jobs that finished longer ago than this: 90s, 10m, 2h, 7d", valueName: "DURATION"),
            OptionSpec(name: "yes", help: "purge dead jobs (their error history goes with them)", isFlag: true),
        ])

    static func purge(_ arguments: [String]) async -> Int32 {
        guard let call = invocation(purgeParser, arguments, expected: "expected at most one QUEUE") else { return HomepwnerCLI.exitCodeOverride }
        var request = PurgeJobsRequest()
        request.queue = call.queue
        var olderThan: Int64?
        switch call.options["state"]?.lowercased() {
        case "done": request.state = .done
        case "dead": request.state = .dead
        case "queued", "running":
            return ItemCommand.usageError("queue purge", "QUEUED and RUNNING jobs are never purged (their work is still owed): give --state done or dead")
        case nil: return ItemCommand.usageError("queue purge", "give --state done or --state dead")
        case let other?: return ItemCommand.usageError("queue purge", "--state \(other): expected done or dead")
        }
        if let text = call.options["older-than"] {
            guard let milliseconds = HumanDuration.milliseconds(text) else {
                return ItemCommand.usageError("queue purge", "--older-than \(text): expected a number and a unit (ms, s, m, h, d), e.g. 90s, 10m, 2h, 7d")
            }
            olderThan = milliseconds
        }
        return await call.withClientExitCode { client, timeout in
            let options = CallOptions(timeoutMilliseconds: timeout)
            // PurgeJobs takes every job of the state or a list: --older-than lists those that
            // finished before the cutoff (updated_at_ms is when a DONE or DEAD job finished).
            var selected: [String]?
            if let olderThan {
                let cutoff = Int64(Date().timeIntervalSince1970 * 1000) - olderThan
                selected = try await QueueJobsCommand.jobs([request.state], queue: call.queue, limit: .max, client: client, timeout: timeout)
                    .filter { $0.updatedAtMs < cutoff }.map(\.jobId)
            }
            if request.state == .dead && !call.options.bool("yes") {
                var count = Int64(selected?.count ?? 0)
                if selected == nil {
                    var statsRequest = JobStatsRequest()
                    statsRequest.queue = call.queue
                    count = try await client.call(JobQueueRPC.stats, statsRequest, options: options).dead
                }
                printError("homepwner queue purge: this removes \(jobs(count, "dead")) of \(call.queue) with their error history, "
                    + "what an operator debugs with; add --yes to purge them ('homepwner queue dead' lists them)")
                return ExitCode.usage
            }
            var purged: Int64 = 0
            if let selected {
                // Never an empty list: that would mean every job of the state.
                for start in stride(from: 0, to: selected.count, by: 1000) {
                    request.jobIds = Array(selected[start..<min(selected.count, start + 1000)])
                    purged += try await client.call(JobQueueRPC.purgeJobs, request, options: options).purged
                }
            } else {
                purged = try await client.call(JobQueueRPC.purgeJobs, request, options: options).purged
            }
            var response = PurgeJobsResponse()
            response.purged = purged
            print(call.json ? try json(response) : "purged \(jobs(purged, request.state.description)) of \(call.queue)")
            return ExitCode.ok
        }
    }

    // MARK: Helpers

    /// A queue subcommand's parsed options, its queue and its other arguments.
    struct Invocation {
        /// "queue stats", for messages.
        let command: String
        let options: ParsedOptions
        let queue: String
        let arguments: [String]
        var json: Bool { options.bool("json") }

        /// Runs `body` with a client of the process that serves the queue.
        func withClient(_ body: (RPCClient, UInt32) async throws -> Void) async -> Int32 {
            await CommonOptions.withClient(options, service: CommonOptions.service(servingQueue: queue), command: command, body)
        }

        /// `withClient` for a body that decides its exit code.
        func withClientExitCode(_ body: (RPCClient, UInt32) async throws -> Int32) async -> Int32 {
            await CommonOptions.withClientExitCode(options, service: CommonOptions.service(servingQueue: queue), command: command, body)
        }
    }

    /// The parser of subcommand `name`, its usage line from `subcommands`.
    static func parser(_ name: String, _ summary: String, _ options: [OptionSpec] = []) -> OptionParser {
        let usage = subcommands.first { $0.name == name }!.usage
        return OptionParser(
            command: "queue \(name)", summary: summary, usage: "homepwner " + usage,
            options: CommonOptions.endpoints + [
                OptionSpec(name: "queue", help: "the queue, thumbnails or capture (or the first argument; default \(defaultQueue))", valueName: "NAME"),
            ] + options,
            allowsPositionals: true)
    }

    /// Parses a subcommand's arguments. The first argument is the queue when `leadingQueue`
    /// says so of the arguments (else --queue, else thumbnails); `accepts` checks the rest
    /// (`expected` says what they should be). Nil after help or a usage mistake, with the exit
    /// code in `HomepwnerCLI.exitCodeOverride`.
    static func invocation(
        _ parser: OptionParser, _ arguments: [String], expected: String,
        leadingQueue: ([String]) -> Bool = { _ in true }, accepts: ([String]) -> Bool = { $0.isEmpty }
    ) -> Invocation? {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return nil }
        var rest = options.positionals
        var queue = options["queue"]
        if let first = rest.first, leadingQueue(rest) {
            if let given = queue, given != first {
                HomepwnerCLI.exitCodeOverride = ItemCommand.usageError(parser.command, "the queue is given twice: '\(first)' and --queue \(given)")
                return nil
            }
            queue = first
            rest.removeFirst()
        }
        guard accepts(rest) else {
            HomepwnerCLI.exitCodeOverride = ItemCommand.usageError(parser.command, expected)
            return nil
        }
        return Invocation(command: parser.command, options: options, queue: queue ?? defaultQueue, arguments: rest)
    }

    /// `invocation` of a subcommand that takes one `name` (JOB_ID, BATCH_ID), the queue before it.
    static func invocation(_ parser: OptionParser, _ arguments: [String], identifiedBy name: String) -> Invocation? {
        invocation(parser, arguments, expected: "expected \(name), or QUEUE \(name)", leadingQueue: { $0.count == 2 }, accepts: { $0.count == 1 })
    }

    /// Whether `text` is a job (or batch) number as the queue gives them: decimal digits.
    static func isJobNumber(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// "1 job", "3 dead jobs".
    static func jobs(_ count: Int64, _ adjective: String = "") -> String {
        "\(count) \(adjective.isEmpty ? "" : adjective.lowercased() + " ")job\(count == 1 ? "" : "s")"
    }

    /// A message as proto3 JSON with the .proto field names.
    static func json<Message: ProtoMessage>(_ message: Message) throws -> String {
        try ProtoJSON.decode(message.serializedBytes(), as: Message.protoName, options: .init(useProtoNames: true))
    }
}
