import CLISupport
import ClaimReport
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner report claim|readiness|value`: the claim packet an insurance adjuster accepts
/// (PDF, CSV or an HTML folder), how ready the inventory is for a claim, and what it is worth.
/// The gathering and the writers are the ClaimReport module's; this only reads the flags.
enum ReportCommand {
    static let subcommands: [(name: String, usage: String)] = [
        ("claim", "report claim --format pdf|csv|html -o OUT [--location L] [--as-of DATE] [--originals] [--policyholder ..] [--policy-number ..] [--insurer ..] [--address ..]"),
        ("readiness", "report readiness [--location L]  (which evidence each location lacks, and the worst gaps)"),
        ("value", "report value [--as-of DATE] [--location L]  (RCV and ACV by location, category and tag; limits)"),
    ]

    static var overview: String {
        "OVERVIEW: The claim packet an insurance adjuster accepts, and what it needs.\n\nUSAGE:\n"
            + subcommands.map { "  homepwner \($0.usage)" }.joined(separator: "\n")
            + "\n\nA location L is named by its path (\"Home/Kitchen\"), its name when no other has it, or its key.\n"
            + "Every subcommand takes --item ENDPOINT, --image ENDPOINT, --timeout MS and --json.\n"
            + "Exit codes: 0 ok, 1 the output could not be written, 2 usage or an output that cannot be made,\n"
            + "3 invalid input or nothing to report, 4 no such location, 5 a service is down."
    }

    static func run(_ arguments: [String]) async -> Int32 {
        await runSubcommand(of: "report", overview: overview, names: subcommands.map(\.name), arguments) { subcommand, rest in
            switch subcommand {
            case "claim": await claim(rest.map { $0 == "-o" ? "--output" : $0 })
            case "readiness": await readiness(rest)
            case "value", "valuation": await value(rest)
            default: nil
            }
        }
    }

    static let locationOption = OptionSpec(
        name: "location", help: "only this location and what is inside it: a path (Home/Kitchen), name or key", valueName: "L")
    static let asOfOption = OptionSpec(
        name: "as-of", defaultValue: "today", help: "value things as of this day (UTC)", valueName: "YYYY-MM-DD|today")

    // MARK: claim

    static let claimParser = OptionParser(
        command: "report claim",
        summary: """
            Writes the claim packet of everything, or of one location: a PDF (cover with the policy and the totals, a table \
            per location with each item's photos, subtotals, the SHA-256 of every original), a CSV (one row per item; RFC 4180, \
            UTF-8 without a byte order mark, CRLF line ends, amounts as plain decimals for the whole line), or an HTML folder \
            (index.html with thumbs/ beside it, no JavaScript, opens offline; --originals also copies every original).
            """,
        usage: "homepwner report claim --format pdf|csv|html -o OUT [--location L] [--as-of DATE] [--originals] [cover flags]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "format", help: "pdf, csv or html", valueName: "FORMAT"),
            OptionSpec(name: "output", help: "the file to write ('-o' for short); for html a folder, new or empty", valueName: "OUT"),
            locationOption, asOfOption,
            OptionSpec(name: "originals", help: "html: also copy each original (originals/<sha256>.<ext>), linked from its thumbnail", isFlag: true),
            OptionSpec(name: "policyholder", help: "the cover's policyholder (default: the policy's)", valueName: "NAME"),
            OptionSpec(name: "insurer", help: "the cover's insurer (default: the policy's)", valueName: "NAME"),
            OptionSpec(name: "policy-number", help: "the cover's policy number (default: the policy's)", valueName: "NUMBER"),
            OptionSpec(name: "address", help: "the cover's address of the insured home (default: the policy's)", valueName: "TEXT"),
        ])

    static func claim(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(claimParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard let formatText = options["format"] else { return ItemCommand.usageError("report claim", "--format pdf, csv or html is required") }
        guard let format = ClaimFormat(rawValue: formatText.lowercased()) else {
            return ItemCommand.usageError("report claim", "--format \(formatText): expected pdf, csv or html")
        }
        guard let path = options["output"], !path.isEmpty else { return ItemCommand.usageError("report claim", "-o OUT is required") }
        if options.bool("originals") && format != .html {
            return ItemCommand.usageError("report claim", "--originals is for --format html (the PDF and CSV name each original by its SHA-256)")
        }
        // The output is made before anything is asked, so one that cannot be written costs nothing.
        let output: ClaimOutput
        do {
            output = try ClaimOutput(path: path, format: format)
        } catch {
            printError("homepwner report claim: \(error)")
            return ExitCode.usage
        }
        let reportOptions = ClaimReportOptions(
            asOf: options["as-of"] ?? "today",
            cover: ClaimCoverOverrides(
                policyholder: options["policyholder"], insurer: options["insurer"], policyNumber: options["policy-number"],
                address: options["address"]),
            originals: options.bool("originals"))
        let json = options.bool("json")
        return await CommonOptions.withClientExitCode(options, service: "item", command: "report claim") { items, timeout in
            defer { output.discard() }
            let imageEndpoint = try options.string("image")
            let images = try RPCClient(context: try CLIContext.make(options), endpoint: imageEndpoint)
            defer { images.close() }
            var location: Location?
            if let text = options["location"] { location = try await InventoryLookup.location(text, client: items, timeout: timeout) }
            let gatherer = ClaimGatherer(
                services: ClaimServices(items: items, images: images, imageEndpoint: imageEndpoint, timeoutMilliseconds: timeout))
            let bar = ReportProgress(enabled: !json && isatty(STDERR_FILENO) == 1)
            do {
                let summary = try await ClaimReport.write(location: location, to: output, gatherer: gatherer, options: reportOptions) {
                    bar.update($0)
                }
                bar.finish()
                print(json ? summaryJSON(summary) : summaryText(summary))
                return ExitCode.ok
            } catch let error as ClaimReportError {
                bar.finish()
                if json {
                    print("{\"error\": \(jsonString(error.message))}")
                } else {
                    printError("homepwner report claim: \(error)")
                }
                switch error.kind {
                case .emptySelection: return ExitCode.invalid
                case .unwritableOutput: return ExitCode.usage
                case .writeFailed: return ExitCode.failure
                }
            } catch {
                bar.finish()
                throw error
            }
        }
    }

    /// "wrote claim.pdf: 12 items in 3 locations, 30 photos (27 shown), 9 pages".
    static func summaryText(_ summary: ClaimReportSummary) -> String {
        var text = "wrote \(summary.path): \(ClaimText.plural(summary.items, "item")) in \(summary.sections) location\(summary.sections == 1 ? "" : "s"), "
            + ClaimText.plural(summary.photos, "photo")
        if summary.format != .csv { text += " (\(summary.thumbnails) shown)" }
        if summary.format == .pdf { text += ", \(summary.pages) pages" }
        if summary.format == .html && summary.originals > 0 { text += ", \(summary.originals) originals copied" }
        if !summary.missingCharacters.isEmpty {
            text += "\nnote: the font has no glyph for \(summary.missingCharacters.count) character(s) (listed on the last page): "
                + summary.missingCharacters.prefix(12).map { String(Character($0)) }.joined(separator: " ")
        }
        return text
    }

    static func summaryJSON(_ summary: ClaimReportSummary) -> String {
        let missing = summary.missingCharacters.map { jsonString(String(Character($0))) }.joined(separator: ", ")
        return "{\"output\": \(jsonString(summary.path)), \"format\": \"\(summary.format.rawValue)\", \"items\": \(summary.items), "
            + "\"locations\": \(summary.sections), \"photos\": \(summary.photos), \"thumbnails\": \(summary.thumbnails), "
            + "\"originals\": \(summary.originals), \"pages\": \(summary.pages), \"missing_characters\": [\(missing)]}"
    }

    // MARK: readiness and value

    static let readinessParser = OptionParser(
        command: "report readiness", summary: "Shows which evidence a claim asks for is missing: per location and the worst gaps (GetReadiness).",
        usage: "homepwner report readiness [--location L] [--json]", options: CommonOptions.endpoints + [locationOption])

    static func readiness(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(readinessParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await ItemCommand.withClient(options) { client, timeout in
            var request = GetReadinessRequest()
            if let text = options["location"] { request.locationKey = try await InventoryLookup.location(text, client: client, timeout: timeout).key }
            let reply = try await client.call(ItemServiceRPC.getReadiness, request, options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                print(try ProtoJSON.decode(reply.serializedBytes(), as: GetReadinessResponse.protoName, options: .init(useProtoNames: true)))
            } else {
                print(ReadinessText.render(reply), terminator: "")
            }
        }
    }

    static let valueParser = OptionParser(
        command: "report value", summary: "Shows what things are worth (RCV, ACV): totals, by location, by category with its limit, by tag (GetValuation).",
        usage: "homepwner report value [--as-of DATE] [--location L] [--json]", options: CommonOptions.endpoints + [asOfOption, locationOption])

    static func value(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(valueParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await ItemCommand.withClient(options) { client, timeout in
            var request = GetValuationRequest()
            request.asOf = options["as-of"] ?? "today"
            var scope: String?
            if let text = options["location"] {
                let location = try await InventoryLookup.location(text, client: client, timeout: timeout)
                request.locationKey = location.key
                scope = location.path
            }
            let reply = try await client.call(ItemServiceRPC.getValuation, request, options: .init(timeoutMilliseconds: timeout))
            if options.bool("json") {
                print(try ProtoJSON.decode(reply.serializedBytes(), as: GetValuationResponse.protoName, options: .init(useProtoNames: true)))
            } else {
                print(ValuationText.render(reply, scope: scope), terminator: "")
            }
        }
    }
}

/// The claim report's progress bar on stderr, redrawn in place (at most every 100 ms) when
/// stderr is a terminal; nothing otherwise.
final class ReportProgress {
    private let enabled: Bool
    private var lastDrawn: UInt64 = 0
    private var drawn = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ progress: ClaimProgress) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard progress.itemsWritten == progress.itemTotal || now - lastDrawn >= 100_000_000 else { return }
        lastDrawn = now
        drawn = true
        let line = ProgressText.bar(fraction: progress.fraction) + String(format: " %3d%%  ", Int(progress.fraction * 100))
            + "\(progress.itemsWritten)/\(progress.itemTotal) items, \(ClaimText.plural(progress.photosWritten, "photo"))  \(progress.section.prefix(40))"
        FileHandle.standardError.write(Data(("\r" + line + "\u{1B}[K").utf8))
    }

    /// Clears the bar's line.
    func finish() {
        guard drawn else { return }
        drawn = false
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
