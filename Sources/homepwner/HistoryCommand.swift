import ClaimReport
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner history [ITEM]` prints the tamper-evident history (HistoryService/GetHistory);
/// `homepwner verify` checks it (VerifyHistory) and re-hashes every attached photo's original
/// against the SHA-256 the history recorded when it was attached.
enum HistoryCommand {
    static let historyParser = OptionParser(
        command: "history",
        summary: "Prints the history of an item (or a location or category, by key), or with no KEY every change, "
            + "oldest first: when, who, what, and each entry's hash.",
        usage: "homepwner history [KEY] [--limit N] [--json]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "limit", defaultValue: "0", help: "print at most N entries (0: all)", valueName: "N")
        ],
        allowsPositionals: true)

    static func history(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(historyParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        let limit: Int
        do {
            guard options.positionals.count <= 1 else { throw ItemCommand.usage("expected at most one KEY") }
            limit = try options.int("limit")
            guard limit >= 0 else { throw OptionError.invalidValue(option: "--limit", value: String(limit), reason: "must be ≥ 0") }
        } catch {
            return ItemCommand.usageError("history", "\(error)")
        }
        let json = options.bool("json")
        return await CommonOptions.withClient(options, service: "item", command: "history") { client, timeout in
            var request = GetHistoryRequest()
            request.subjectKey = options.positionals.first ?? ""
            request.pageSize = 1000
            var printed = 0
            var head: HistoryHead?
            repeat {
                let page = try await client.call(HistoryServiceRPC.getHistory, request, options: .init(timeoutMilliseconds: timeout))
                head = page.head
                for entry in page.entries where limit == 0 || printed < limit {
                    print(json ? try Self.json(entry) : Self.line(entry))
                    printed += 1
                }
                request.pageToken = limit > 0 && printed >= limit ? "" : page.nextPageToken
            } while !request.pageToken.isEmpty
            if !json {
                if printed == 0 {
                    print(request.subjectKey.isEmpty ? "the history is empty" : "no history for \(request.subjectKey)")
                }
                if let head, head.seq > 0 { print("head: entry \(head.seq) \(head.hash)") }
            }
        }
    }

    /// One entry as a line: seq, time (UTC), actor, action, what, hash.
    static func line(_ entry: HistoryEntry) -> String {
        var what = entry.subjectKey
        if let item = entry.item { what = "\(item.name) (\(item.key), version \(item.version))" }
        if let location = entry.location { what = "\(location.name) (\(location.key))" }
        if let category = entry.category { what = "\(category.name) (\(category.key))" }
        if entry.policy != nil { what = "the policy" }
        if !entry.photoKey.isEmpty { what += " photo \(entry.photoKey)" }
        if !entry.photoChecksum.isEmpty { what += " \(entry.photoChecksum)" }
        if entry.action == "item.moved" { what += " from \(entry.fromIndex) to \(entry.toIndex)" }
        return "\(entry.seq)  \(ClaimText.utc(milliseconds: entry.atMs))  \(entry.actor)  \(entry.action)  \(what)  \(entry.hash)"
    }

    static func json(_ entry: HistoryEntry) throws -> String {
        try ProtoJSON.decode(
            entry.serializedBytes(), as: HistoryEntry.protoName, options: .init(useProtoNames: true, prettyPrinted: false))
    }

    // MARK: verify

    static let verifyParser = OptionParser(
        command: "verify",
        summary: "Checks the history: re-walks the hash chain and reports the first entry that does not hold, lists what "
            + "changed without an entry, and re-hashes every attached photo's original against the SHA-256 recorded when it "
            + "was attached. Exit 0 when all holds, 1 with findings.",
        usage: "homepwner verify [--no-bytes] [--json]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "no-bytes", help: "compare recorded and stored checksums without reading the originals", isFlag: true)
        ])

    static func verify(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(verifyParser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        return await CommonOptions.withClientExitCode(options, service: "item", command: "verify") { items, timeout in
            let context = try CLIContext.make(options)
            let images = try RPCClient(context: context, endpoint: try options.string("image"))
            defer { images.close() }
            let call = CallOptions(timeoutMilliseconds: max(timeout, 120_000))
            let chain = try await items.call(HistoryServiceRPC.verifyHistory, VerifyHistoryRequest(), options: call)
            var photos = PhotoCheck(items: items, images: images, timeout: timeout, readBytes: !options.bool("no-bytes"))
            try await photos.run()
            let intact = chain.intact && photos.findings.isEmpty
            if options.bool("json") {
                print("{\"intact\": \(intact), \"history\": \(try QueueCommand.json(chain)), \"photos_checked\": \(photos.checked), "
                    + "\"bytes_read\": \(photos.bytesRead), \"photo_findings\": [" + photos.findings.map(jsonString).joined(separator: ", ") + "]}")
            } else {
                let head = chain.head.map { "entry \($0.seq) \($0.hash)" } ?? "none"
                print("history: \(chain.entriesChecked) entries checked, head \(head)")
                if chain.firstBreakSeq != 0 { print("  BROKEN at entry \(chain.firstBreakSeq): \(chain.problem)") }
                for finding in chain.unrecorded { print("  unrecorded: \(finding)") }
                if chain.unrecordedCount > Int64(chain.unrecorded.count) {
                    print("  … and \(chain.unrecordedCount - Int64(chain.unrecorded.count)) more changed without an entry")
                }
                print("photos: \(photos.checked) checked, \(ImageCommand.byteCount(photos.bytesRead)) read")
                for finding in photos.findings { print("  \(finding)") }
                print(intact ? "intact" : "NOT intact")
            }
            return intact ? ExitCode.ok : ExitCode.failure
        }
    }

    /// Every photo an item holds now: the SHA-256 the history recorded when it was attached,
    /// the image service's, and (with `readBytes`) the original's bytes hashed again.
    struct PhotoCheck {
        let items: RPCClient
        let images: RPCClient
        let timeout: UInt32
        let readBytes: Bool
        var findings: [String] = []
        var checked = 0
        var bytesRead: Int64 = 0

        var options: CallOptions { .init(timeoutMilliseconds: timeout) }

        mutating func run() async throws {
            // What each photo.attached entry recorded, the last per item and photo.
            var recorded: [String: String] = [:]
            var history = GetHistoryRequest()
            history.pageSize = 1000
            repeat {
                let page = try await items.call(HistoryServiceRPC.getHistory, history, options: options)
                for entry in page.entries where entry.action == "photo.attached" && !entry.photoChecksum.isEmpty {
                    recorded[entry.subjectKey + "/" + entry.photoKey] = entry.photoChecksum
                }
                history.pageToken = page.nextPageToken
            } while !history.pageToken.isEmpty
            var list = ListItemsRequest()
            list.pageSize = 1000
            repeat {
                let page = try await items.call(ItemServiceRPC.listItems, list, options: options)
                for item in page.items {
                    for photo in item.photoKeys { try await check(item: item.key, photo: photo, recorded: recorded[item.key + "/" + photo]) }
                }
                list.pageToken = page.nextPageToken
            } while !list.pageToken.isEmpty
        }

        private mutating func check(item: String, photo: String, recorded: String?) async throws {
            checked += 1
            guard let info = try await BlobRead.stat(photo, images: images, options: options) else {
                findings.append("item \(item) photo \(photo): the image service does not have it")
                return
            }
            let expected = recorded ?? info.checksum
            if let recorded, recorded != info.checksum {
                findings.append("item \(item) photo \(photo): the image service says \(info.checksum), the history recorded \(recorded)")
            }
            guard readBytes else { return }
            let read = try await BlobRead.hash(info, images: images, timeout: timeout)
            bytesRead += read.bytes
            if let problem = read.problem {
                findings.append("item \(item) photo \(photo): \(problem)")
            } else if let checksum = read.checksum, checksum != expected {
                findings.append("item \(item) photo \(photo): its bytes hash to \(checksum), not the \(recorded == nil ? "stored" : "recorded") \(expected)")
            }
        }
    }
}
