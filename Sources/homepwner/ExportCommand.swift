import Digest
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner export FILE.tar`: the inventory as a portable archive another installation can
/// import (`ImportCommand`; docs/protocol.md §19): items, locations, categories, the policy and
/// the history as proto JSON, each attached photo's original bytes once by SHA-256, and a
/// manifest of every file's size and SHA-256.
enum ExportCommand {
    static let parser = OptionParser(
        command: "export",
        summary: "Writes the inventory into FILE (a tar): items, locations, categories, the policy and the history as JSON "
            + "(the proto JSON mapping), every attached photo's original bytes under photos/<sha256>, and manifest.json with "
            + "each file's size and SHA-256. 'homepwner import FILE' reads it into another installation.",
        usage: "homepwner export FILE.tar [--json] [--no-progress]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "no-progress", help: "no progress bar", isFlag: true)
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("export", "expected one FILE (e.g. inventory.tar)") }
        let file = options.positionals[0]
        return await CommonOptions.withClientExitCode(options, service: "item", command: "export") { items, timeout in
            let context = try CLIContext.make(options)
            let images = try RPCClient(context: context, endpoint: try options.string("image"))
            defer { images.close() }
            let run = ExportRun(
                file: file, items: items, images: images, timeout: timeout,
                progress: !options.bool("no-progress") && !options.bool("json") && isatty(2) == 1)
            let summary = try await run.run()
            print(options.bool("json") ? summary.json : summary.line)
            return ExitCode.ok
        }
    }
}

/// One export: read everything, then write the archive to FILE.partial and rename it.
struct ExportRun {
    let file: String
    let items: RPCClient
    let images: RPCClient
    let timeout: UInt32
    let progress: Bool

    struct Summary {
        var file = ""
        var counts: [String: Int] = [:]
        var photoBytes: Int64 = 0
        var head = HistoryHead()

        var line: String {
            "exported \(counts["items"] ?? 0) items, \(counts["locations"] ?? 0) locations, \(counts["categories"] ?? 0) categories, "
                + "\(counts["history"] ?? 0) history entries and \(counts["photos"] ?? 0) photos (\(ImageCommand.byteCount(photoBytes))) "
                + "to \(file) (history head \(head.seq) \(head.hash))"
        }

        var json: String {
            "{\"file\": \(jsonString(file)), " + counts.keys.sorted().map { "\"\($0)\": \(counts[$0]!)" }.joined(separator: ", ")
                + ", \"photo_bytes\": \(photoBytes), \"history_head\": {\"seq\": \(head.seq), \"hash\": \(jsonString(head.hash))}}"
        }
    }

    var options: CallOptions { .init(timeoutMilliseconds: timeout) }

    func run() async throws -> Summary {
        let before = try await head()
        let (itemList, locations, categories, policy, history) = try await readInventory()
        // An export is one moment of the inventory: a change while it was read is read again.
        let after = try await head()
        guard after.hash == before.hash else {
            throw ExportError("the inventory changed while it was exported (history \(before.seq) → \(after.seq)); run the export again")
        }
        var infos: [ImageInfo] = []
        var seen = Set<String>()
        for item in itemList {
            for key in item.photoKeys where seen.insert(key).inserted {
                guard let info = try await BlobRead.stat(key, images: images, options: options) else {
                    throw ExportError("photo \(key) of item \(item.key) is not in the image service; run 'homepwner fsck' first")
                }
                infos.append(info)
            }
        }
        // An edited photo is stored with its original (its parent_key), so the original goes too.
        var index = 0
        while index < infos.count {
            let parent = infos[index].parentKey
            if !parent.isEmpty, seen.insert(parent).inserted {
                guard let info = try await BlobRead.stat(parent, images: images, options: options) else {
                    throw ExportError("photo \(infos[index].key) is an edit of image \(parent), which the image service no longer holds")
                }
                infos.append(info)
            }
            index += 1
        }
        var summary = Summary()
        summary.file = file
        summary.head = after
        var manifest = ExportManifest()
        manifest.historyHead = after
        manifest.counts = [
            "items": itemList.count, "locations": locations.count, "categories": categories.count, "history": history.count,
            "images": infos.count,
        ]
        let partial = file + ".partial"
        FileManager.default.createFile(atPath: partial, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: partial) else { throw ExportError("\(partial) cannot be written") }
        do {
            let tar = TarWriter(handle: handle)
            func add(_ name: String, _ bytes: [UInt8]) throws {
                try tar.add(name, bytes)
                manifest.files.append(.init(path: name, size: Int64(bytes.count), sha256: SHA256.checksum(bytes)))
            }
            try add(ExportFormat.items, try ExportFormat.jsonArray(itemList))
            try add(ExportFormat.locations, try ExportFormat.jsonArray(locations))
            try add(ExportFormat.categories, try ExportFormat.jsonArray(categories))
            try add(ExportFormat.policy, Array((try ExportFormat.json(policy) + "\n").utf8))
            try add(ExportFormat.history, try ExportFormat.jsonArray(history))
            try add(ExportFormat.images, try ExportFormat.jsonArray(infos))
            let photos = try await writePhotos(infos, to: tar, manifest: &manifest)
            summary.photoBytes = photos.bytes
            manifest.counts["photos"] = photos.files
            summary.counts = manifest.counts
            try tar.add(ExportFormat.manifest, try manifest.bytes())
            try tar.finish()
            try handle.synchronize()
            try handle.close()
            try? FileManager.default.removeItem(atPath: file)
            try FileManager.default.moveItem(atPath: partial, toPath: file)
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        return summary
    }

    private func head() async throws -> HistoryHead {
        var request = GetHistoryRequest()
        request.pageSize = 1
        return try await items.call(HistoryServiceRPC.getHistory, request, options: options).head ?? HistoryHead()
    }

    private func readInventory() async throws -> ([Item], [Location], [Category], Policy, [HistoryEntry]) {
        var list: [Item] = []
        var request = ListItemsRequest()
        request.pageSize = 1000
        repeat {
            let page = try await items.call(ItemServiceRPC.listItems, request, options: options)
            list += page.items
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        let locations = try await items.call(ItemServiceRPC.listLocations, ListLocationsRequest(), options: options).locations
            .map { location in
                // Derived on reads, not the location's own: left out.
                var location = location
                location.path = ""
                location.depth = 0
                location.itemCount = 0
                location.subtreeItemCount = 0
                return location
            }
        let categories = try await items.call(ItemServiceRPC.listCategories, ListCategoriesRequest(), options: options).categories
            .map { category in
                var category = category
                category.itemCount = 0
                return category
            }
        let policy = try await items.call(ItemServiceRPC.getPolicy, GetPolicyRequest(), options: options)
        var history: [HistoryEntry] = []
        var page = GetHistoryRequest()
        page.pageSize = 1000
        repeat {
            let response = try await items.call(HistoryServiceRPC.getHistory, page, options: options)
            history += response.entries
            page.pageToken = response.nextPageToken
        } while !page.pageToken.isEmpty
        return (list, locations, categories, policy, history)
    }

    /// Each distinct content once, read over GetImage and checked against its SHA-256.
    private func writePhotos(_ infos: [ImageInfo], to tar: TarWriter, manifest: inout ExportManifest) async throws -> (files: Int, bytes: Int64) {
        var written = Set<String>()
        let unique = infos.filter { written.insert($0.checksum).inserted }
        let bar = ProgressBar(total: Int(unique.reduce(0) { $0 + $1.sizeBytes }), enabled: progress)
        var done: Int64 = 0
        for info in unique {
            let name = ExportFormat.photoName(info.checksum)
            guard ExportFormat.photoHex(name) != nil else {
                throw ExportError("photo \(info.key) has no SHA-256 in the image service (checksum \(jsonString(info.checksum)))")
            }
            try tar.begin(name, size: info.sizeBytes)
            var sent = done
            let read = try await BlobRead.hash(info, images: images, timeout: timeout) { bytes in
                try tar.write(bytes)
                sent += Int64(bytes.count)
                bar.update(Int(sent))
            }
            guard read.checksum == info.checksum else {
                let why = read.problem ?? read.checksum.map { "its bytes hash to \($0), not its recorded \(info.checksum)" } ?? "it was deleted during the export"
                throw ExportError("photo \(info.key): \(why); nothing was exported")
            }
            try tar.end()
            done += info.sizeBytes
            manifest.files.append(.init(path: name, size: info.sizeBytes, sha256: info.checksum))
        }
        bar.finish()
        return (unique.count, done)
    }
}
