import CLISupport
import Foundation
import Proto
import RPC
import Runtime

/// Dispatches `homepwner COMMAND …` to its subcommand.
enum HomepwnerCLI {
    static let commands: [(name: String, summary: String)] = [
        ("up", "run the whole suite in this process (item, image, capture, thumbnail)"),
        ("health", "check that the services answer (Health/Check)"),
        ("stats", "what each process has served, its memory, queues and cache (Metrics/Stats); --watch"),
        ("call", "call any method with a JSON request, print the JSON response"),
        ("methods", "list every method, or describe one's request and response"),
        ("item", "add, list, search, show, edit, remove and move items, with what a claim asks for"),
        ("location", "the places items are in, as a tree: add, ls, mv, edit, rm"),
        ("category", "coverage categories: depreciation and limits"),
        ("policy", "the insurance policy: currency, contents limit, the claim packet's cover"),
        ("report", "the claim packet (pdf, csv, html), readiness and valuation"),
        ("image", "put, get, list, stat and remove images and videos"),
        ("cache", "the image service's cache: stats, purge"),
        ("queue", "a job queue's counts, jobs, dead jobs, retries, pause, purge, batches"),
        ("thumbs", "make thumbnails in bulk (all, missing, given images) and follow the batch"),
        ("capture", "capture photos and movies into an item (file, library, recent, camera), with edits"),
        ("watch", "print the services' events as they happen"),
        ("fsck", "check both services agree and every blob is whole; --repair removes orphans, detaches lost photos"),
        ("history", "every change to an item (or to everything), who made it and when, hash-chained"),
        ("verify", "check the history's hash chain and re-hash every photo against what it recorded"),
        ("backup", "back both services up into a folder while they serve; 'backup verify DIR' checks one"),
        ("restore", "restore a backup into an empty data folder"),
        ("export", "write the inventory, its history and photos into a portable tar another installation can import"),
        ("import", "read an export into this installation, keys kept; conflicts reported, nothing half-imported"),
        ("keys", "CURVE key files and the allowed keys with their roles: gen, allow, revoke, ls; sign-gen: a signing key"),
        ("completions", "print the bash, zsh or fish completion script (ops/install installs them)"),
        ("man", "print the man page, homepwner(1), in roff"),
    ] + ServicePrograms.all.map { ($0.command, $0.summary) }

    static var overview: String {
        var text = """
        OVERVIEW: Homepwner admin CLI — a home inventory with photos, over ZeroMQ.

        USAGE: homepwner COMMAND [options]

        COMMANDS:

        """
        let width = (commands.map(\.name.count).max() ?? 0) + 2
        for command in commands {
            text += "  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += """

        Run 'homepwner COMMAND --help' for a command's options.
        Endpoints come from --item/--image or HOMEPWNER_ITEM_RPC / HOMEPWNER_IMAGE_RPC.
        """
        return text
    }

    static func main(_ arguments: [String]) async -> Never {
        guard let command = arguments.first else {
            print(overview)
            exit(ExitCode.usage)
        }
        let rest = Array(arguments.dropFirst())
        if let program = ServicePrograms.named(command) { await program.main(rest) }
        let code: Int32
        switch command {
        case "-h", "--help", "help":
            print(overview)
            code = 0
        case "--version", "version":
            print("homepwner \(HomepwnerVersion.string)")
            code = 0
        case "up":
            code = await UpCommand.run(rest)
        case "health":
            code = await HealthCommand.run(rest)
        case "stats":
            code = await StatsCommand.run(rest)
        case "call":
            code = await CallCommand.run(rest)
        case "methods":
            code = MethodsCommand.run(rest)
        case "item":
            code = await ItemCommand.run(rest)
        case "location", "locations":
            code = await LocationCommand.run(rest)
        case "category", "categories":
            code = await CategoryCommand.run(rest)
        case "policy":
            code = await PolicyCommand.run(rest)
        case "report":
            code = await ReportCommand.run(rest)
        case "image":
            code = await ImageCommand.run(rest)
        case "cache":
            code = await CacheCommand.run(rest)
        case "queue":
            code = await QueueCommand.run(rest)
        case "thumbs":
            code = await ThumbsCommand.run(rest)
        case "capture":
            code = await CaptureCommand.run(rest)
        case "watch":
            code = await WatchCommand.run(rest)
        case "keys":
            code = await KeysCommand.run(rest)
        case "fsck":
            code = await FsckCommand.run(rest)
        case "history":
            code = await HistoryCommand.history(rest)
        case "verify":
            code = await HistoryCommand.verify(rest)
        case "backup":
            code = await BackupCommand.run(rest)
        case "restore":
            code = RestoreCommand.run(rest)
        case "export":
            code = await ExportCommand.run(rest)
        case "import":
            code = await ImportCommand.run(rest)
        case "completions":
            code = CompletionsCommand.run(rest)
        case "man":
            code = CompletionsCommand.man(rest)
        default:
            let hint = didYouMean(command, among: commands.map(\.name))
            printError("homepwner: unknown command '\(command)'\(hint) (see homepwner --help)")
            code = ExitCode.usage
        }
        exit(code)
    }

    /// Parses a subcommand's options; prints help or the usage error and returns nil for those.
    static func parse(_ parser: OptionParser, _ arguments: [String]) -> ParsedOptions? {
        do {
            return try parser.parse(arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            if case let .helpRequested(text) = error {
                print(text)
                exitCodeOverride = 0
            } else {
                printError("homepwner \(parser.command): \(error)")
                exitCodeOverride = ExitCode.usage
            }
            return nil
        }
    }

    /// Set by `parse` when it handled the arguments itself (help or usage error).
    nonisolated(unsafe) static var exitCodeOverride: Int32 = ExitCode.usage
}

/// Exit codes that tell scripts what went wrong.
enum ExitCode {
    static let ok: Int32 = 0
    /// Anything not listed below (INTERNAL, DATA_LOSS, …).
    static let failure: Int32 = 1
    /// Bad flags or arguments (nothing was sent).
    static let usage: Int32 = 2
    /// The server refused the input: INVALID_ARGUMENT, OUT_OF_RANGE, FAILED_PRECONDITION.
    static let invalid: Int32 = 3
    /// NOT_FOUND.
    static let notFound: Int32 = 4
    /// UNAVAILABLE or DEADLINE_EXCEEDED: the service is down or too slow.
    static let unavailable: Int32 = 5
    /// ALREADY_EXISTS or ABORTED (e.g. a stale version).
    static let conflict: Int32 = 6
    /// A watched batch (`queue batch --watch`) finished with dead jobs; a followed capture job
    /// failed for a reason no other code names.
    static let deadJobs: Int32 = BatchProgress.deadJobsExitCode
    /// PERMISSION_DENIED or UNAUTHENTICATED: this client's key may not do that (its role).
    static let denied: Int32 = 8

    static func forStatus(_ code: StatusCode) -> Int32 {
        switch code {
        case .ok: ok
        case .invalidArgument, .outOfRange, .failedPrecondition: invalid
        case .notFound: notFound
        case .unavailable, .deadlineExceeded: unavailable
        case .alreadyExists, .aborted: conflict
        case .permissionDenied, .unauthenticated: denied
        default: failure
        }
    }
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Prints an RPC failure for people (stderr) or scripts (`--json`, stdout) and returns the exit code.
func report(_ error: RPCError, json: Bool) -> Int32 {
    if json {
        print(errorJSON(error))
    } else {
        printError("error: \(error)")
        if error.code == .unavailable {
            printError("hint: is the suite running? Start it with 'ops/run' or 'homepwner up'.")
        }
    }
    return ExitCode.forStatus(error.code)
}

/// `{"code": 3, "status": "INVALID_ARGUMENT", "message": "…"}`.
func errorJSON(_ error: RPCError) -> String {
    let status = error.code.protoValueName ?? String(error.code.rawValue)
    return "{\"code\": \(error.code.rawValue), \"status\": \"\(status)\", \"message\": \(jsonString(error.message))}"
}

/// A JSON string literal.
func jsonString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// Runs the subcommand of a command group (`homepwner item add …`): prints the overview for none
/// or `--help`, hands the rest of the arguments to `route`, and says what is wrong (with a
/// suggestion) when `route` knows no such subcommand (returns nil).
func runSubcommand(
    of group: String, overview: String, names: [String], _ arguments: [String],
    route: (_ subcommand: String, _ rest: [String]) async -> Int32?
) async -> Int32 {
    guard let subcommand = arguments.first else {
        print(overview)
        return ExitCode.usage
    }
    if ["-h", "--help", "help"].contains(subcommand) {
        print(overview)
        return ExitCode.ok
    }
    if let status = await route(subcommand, Array(arguments.dropFirst())) { return status }
    let hint = didYouMean(subcommand, among: names)
    printError("homepwner \(group): unknown subcommand '\(subcommand)'\(hint) (see homepwner \(group) --help)")
    return ExitCode.usage
}

/// "; did you mean 'health'?" for a plausible typo of one of `names`, else "".
func didYouMean(_ word: String, among names: [String]) -> String {
    OptionParser.closest(to: word, among: names).map { "; did you mean '\($0)'?" } ?? ""
}
