import Digest
import Foundation
import Proto
import RPC
import Runtime

/// `homepwner import FILE.tar`: reads an export (`ExportCommand`) into this installation with
/// its keys (docs/protocol.md §19). Everything is checked offline first (the manifest's sizes and
/// SHA-256s, the JSON, every photo present); then the item service stages it and reports every
/// conflict; with none (or with --skip-conflicts) the photos are put and the import commits in
/// one transaction: its items appear all at once or not at all.
enum ImportCommand {
    static let parser = OptionParser(
        command: "import",
        summary: "Reads an export (homepwner export) into this installation, keeping every key. The archive is checked "
            + "first (each file against the manifest's SHA-256); then every conflict is reported (an item, location or "
            + "category held here with other content, or deleted here) and nothing is written. What is held here already "
            + "with the same content is skipped, so importing twice is harmless. Exit 0 imported (or nothing to do), 1 "
            + "conflicts or a damaged archive.",
        usage: "homepwner import FILE.tar [--skip-conflicts] [--dry-run] [--json] [--no-progress]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "skip-conflicts", help: "import what does not conflict, report the rest", isFlag: true),
            OptionSpec(name: "dry-run", help: "check the archive and report what would be imported and every conflict; write nothing", isFlag: true),
            OptionSpec(name: "no-progress", help: "no progress bar", isFlag: true),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("import", "expected one FILE (an export's .tar)") }
        let file = options.positionals[0]
        let json = options.bool("json")
        // Offline first: a damaged archive is refused before any service is asked.
        let export: CheckedExport
        do {
            export = try CheckedExport(path: file)
        } catch {
            if json {
                print("{\"imported\": false, \"error\": \(jsonString("\(error)"))}")
            }
            printError("homepwner import: \(error); nothing was imported")
            return ExitCode.failure
        }
        return await CommonOptions.withClientExitCode(options, service: "item", command: "import") { items, timeout in
            let context = try CLIContext.make(options)
            let images = try RPCClient(context: context, endpoint: try options.string("image"))
            defer { images.close() }
            let run = ImportRun(
                export: export, items: items, images: images, timeout: timeout, skipConflicts: options.bool("skip-conflicts"),
                dryRun: options.bool("dry-run"), progress: !options.bool("no-progress") && !json && isatty(2) == 1)
            let outcome = try await run.run()
            if json {
                print(outcome.json)
            } else {
                for conflict in outcome.response.conflicts { print("conflict: \(conflict.message)") }
                print(outcome.line)
            }
            return outcome.failed ? ExitCode.failure : ExitCode.ok
        }
    }
}

/// An export read and checked offline: every entry the manifest lists, with its size and
/// SHA-256, and no other; the JSON decoded; every photo an item names present.
struct CheckedExport {
    let tar: TarReader
    let manifest: ExportManifest
    let items: [Item]
    let locations: [Location]
    let categories: [Category]
    /// The attached photos by image key.
    let images: [String: ImageInfo]
    /// In images.json order.
    let imageOrder: [String]
    /// The largest JSON file read whole (100,000 items take about 100 MB).
    static let maxJSONBytes: Int64 = 1 << 30

    init(path: String) throws {
        let tar = try TarReader(path: path, allowed: ExportFormat.isAllowed)
        self.tar = tar
        guard let manifestEntry = tar.byName[ExportFormat.manifest] else {
            throw ExportError("\(path) has no \(ExportFormat.manifest): not a homepwner export")
        }
        guard manifestEntry.size <= CheckedExport.maxJSONBytes else {
            throw ExportError("\(ExportFormat.manifest): \(manifestEntry.size) bytes, more than an export's JSON may have (\(CheckedExport.maxJSONBytes))")
        }
        let manifest = try ExportManifest.parse(try tar.bytes(manifestEntry))
        self.manifest = manifest
        let listed = Dictionary(manifest.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        for entry in tar.entries where entry.name != ExportFormat.manifest {
            guard let file = listed[entry.name] else { throw ExportError("\(entry.name): in the archive but not in the manifest") }
            guard file.size == entry.size else {
                throw ExportError("\(entry.name): \(entry.size) bytes, but the manifest says \(file.size)")
            }
            var hash = SHA256()
            try tar.stream(entry) { hash.update($0) }
            let sum = hash.checksum()
            guard sum == file.sha256 else {
                throw ExportError("\(entry.name): its bytes hash to \(sum), not the manifest's \(file.sha256): the archive is damaged")
            }
            if let hex = ExportFormat.photoHex(entry.name), sum != "sha256:" + hex {
                throw ExportError("\(entry.name): its bytes hash to \(sum), not the SHA-256 its name says")
            }
        }
        for file in manifest.files where tar.byName[file.path] == nil {
            throw ExportError("\(file.path): listed in the manifest but missing from the archive")
        }
        func json(_ name: String) throws -> [UInt8] {
            guard let entry = tar.byName[name] else { throw ExportError("\(name): missing from the archive") }
            guard entry.size <= CheckedExport.maxJSONBytes else {
                throw ExportError("\(name): \(entry.size) bytes, more than an export's JSON may have (\(CheckedExport.maxJSONBytes))")
            }
            return try tar.bytes(entry)
        }
        let items = try ExportFormat.messages(try json(ExportFormat.items), file: ExportFormat.items, as: Item.self)
        self.items = items
        locations = try ExportFormat.messages(try json(ExportFormat.locations), file: ExportFormat.locations, as: Location.self)
        categories = try ExportFormat.messages(try json(ExportFormat.categories), file: ExportFormat.categories, as: Category.self)
        _ = try ExportFormat.messages(try json(ExportFormat.history), file: ExportFormat.history, as: HistoryEntry.self)
        let infos = try ExportFormat.messages(try json(ExportFormat.images), file: ExportFormat.images, as: ImageInfo.self)
        var images: [String: ImageInfo] = [:]
        for (index, info) in infos.enumerated() {
            guard tar.byName[ExportFormat.photoName(info.checksum)] != nil, ExportFormat.photoHex(ExportFormat.photoName(info.checksum)) != nil else {
                throw ExportError("\(ExportFormat.images)[\(index)]: image \(info.key)'s bytes (\(ExportFormat.photoName(info.checksum))) are missing")
            }
            images[info.key] = info
        }
        for info in infos where !info.parentKey.isEmpty && images[info.parentKey] == nil {
            throw ExportError("\(ExportFormat.images): image \(info.key) is an edit of \(info.parentKey), which is not in it")
        }
        self.images = images
        imageOrder = infos.map(\.key)
        for item in items {
            for key in item.photoKeys where images[key] == nil {
                throw ExportError("\(ExportFormat.items): item \(item.key)'s photo \(key) is not in \(ExportFormat.images)")
            }
        }
    }
}

/// One import: stage, check, put the photos, commit.
struct ImportRun {
    let export: CheckedExport
    let items: RPCClient
    let images: RPCClient
    let timeout: UInt32
    let skipConflicts: Bool
    let dryRun: Bool
    let progress: Bool
    /// Items per AddImport call.
    static let itemsPerCall = 500

    struct Outcome {
        var response = CommitImportResponse()
        var photosPut = 0
        var dryRun = false
        var skipConflicts = false

        /// Conflicts stop an import unless skipped; a dry run with conflicts fails too, so a
        /// script can test an import before running it.
        var failed: Bool { !response.conflicts.isEmpty && !skipConflicts }

        var line: String {
            let r = response
            let counts = "\(r.itemsCreated) items, \(r.locationsCreated) locations, \(r.categoriesCreated) categories, \(r.photosAttached) photos"
            let unchanged = "\(r.itemsUnchanged) items, \(r.locationsUnchanged) locations, \(r.categoriesUnchanged) categories already here"
            if dryRun {
                return "dry run: would import \(counts); \(unchanged); \(r.conflicts.count) conflicts"
            }
            if !r.committed {
                if r.conflicts.isEmpty || skipConflicts {
                    return "nothing to import: \(unchanged)" + (r.conflicts.isEmpty ? "" : "; \(r.conflicts.count) conflicts skipped")
                }
                return "nothing imported: \(r.conflicts.count) conflicts (listed above); resolve them, or import the rest with --skip-conflicts"
            }
            return "imported \(counts); \(unchanged)" + (r.conflicts.isEmpty ? "" : "; \(r.conflicts.count) conflicts skipped")
                + "; history head \(r.head?.seq ?? 0)"
        }

        var json: String {
            let r = response
            return "{\"imported\": \(r.committed), \"dry_run\": \(dryRun), \"items_created\": \(r.itemsCreated), "
                + "\"locations_created\": \(r.locationsCreated), \"categories_created\": \(r.categoriesCreated), "
                + "\"photos_attached\": \(r.photosAttached), \"photos_put\": \(photosPut), \"items_unchanged\": \(r.itemsUnchanged), "
                + "\"locations_unchanged\": \(r.locationsUnchanged), \"categories_unchanged\": \(r.categoriesUnchanged), \"conflicts\": ["
                + r.conflicts.map { conflict in
                    "{\"kind\": \(jsonString(conflict.kind)), \"key\": \(jsonString(conflict.key)), \"fields\": ["
                        + conflict.fields.map(jsonString).joined(separator: ", ") + "], \"message\": \(jsonString(conflict.message))}"
                }.joined(separator: ", ") + "]}"
        }
    }

    var options: CallOptions { .init(timeoutMilliseconds: timeout) }

    func run() async throws -> Outcome {
        var outcome = Outcome()
        outcome.dryRun = dryRun
        outcome.skipConflicts = skipConflicts
        var begin = BeginImportRequest()
        begin.sourceHead = export.manifest.historyHead
        let id = try await items.call(ImportServiceRPC.beginImport, begin, options: options).importId
        do {
            return try await stageAndCommit(id, outcome)
        } catch {
            // Best effort: an import left open is forgotten once idle anyway.
            try? await abort(id)
            throw error
        }
    }

    private func stageAndCommit(_ id: String, _ outcome: Outcome) async throws -> Outcome {
        var outcome = outcome
        try await stage(id)
        var commit = CommitImportRequest()
        commit.importId = id
        commit.dryRun = true
        let plan = try await items.call(ImportServiceRPC.commitImport, commit, options: .init(timeoutMilliseconds: max(timeout, 60_000)))
        outcome.response = plan
        if dryRun || (!plan.conflicts.isEmpty && !skipConflicts) || plan.itemsCreated + plan.locationsCreated + plan.categoriesCreated == 0 {
            try await abort(id)
            return outcome
        }
        outcome.photosPut = try await putPhotos(conflicting: Set(plan.conflicts.filter { $0.kind == "item" }.map(\.key)))
        commit.dryRun = false
        commit.skipConflicts = skipConflicts
        outcome.response = try await items.call(
            ImportServiceRPC.commitImport, commit, options: .init(timeoutMilliseconds: max(timeout, 120_000), retry: .none))
        if !outcome.response.committed { try? await abort(id) }
        return outcome
    }

    private func abort(_ id: String) async throws {
        var abort = AbortImportRequest()
        abort.importId = id
        _ = try await items.call(ImportServiceRPC.abortImport, abort, options: options)
    }

    /// Locations and categories with the first call; items in calls of `itemsPerCall`, each with
    /// the checksums of their photos.
    private func stage(_ id: String) async throws {
        var index = 0
        repeat {
            var add = AddImportRequest()
            add.importId = id
            if index == 0 {
                add.locations = export.locations
                add.categories = export.categories
            }
            let slice = export.items[index..<min(index + Self.itemsPerCall, export.items.count)]
            add.items = Array(slice)
            var named = Set<String>()
            for item in slice {
                for key in item.photoKeys where named.insert(key).inserted {
                    var photo = ImportPhoto()
                    photo.imageKey = key
                    photo.checksum = export.images[key]!.checksum
                    add.photos.append(photo)
                }
            }
            _ = try await items.call(ImportServiceRPC.addImport, add, options: options)
            index += Self.itemsPerCall
        } while index < export.items.count
    }

    /// Puts every photo of the items that do not conflict under its own key (a repeat of a key
    /// the image service holds returns what it holds; the commit then compares checksums).
    private func putPhotos(conflicting: Set<String>) async throws -> Int {
        var keys: [String] = []
        var seen = Set<String>()
        // An edit is stored after its original (its parent_key must exist).
        func add(_ key: String) {
            guard seen.insert(key).inserted, let info = export.images[key] else { return }
            if !info.parentKey.isEmpty { add(info.parentKey) }
            keys.append(key)
        }
        for item in export.items where !conflicting.contains(item.key) {
            for key in item.photoKeys { add(key) }
        }
        let infos = keys.map { export.images[$0]! }
        let bar = ProgressBar(total: Int(infos.reduce(0) { $0 + $1.sizeBytes }), enabled: progress)
        var done = 0
        for info in infos {
            guard let entry = export.tar.byName[ExportFormat.photoName(info.checksum)] else {
                throw ExportError("\(ExportFormat.photoName(info.checksum)): missing from the archive")
            }
            var settings = ImagePutCommand.Settings()
            settings.owner = info.ownerKey
            settings.kind = info.kind
            settings.parent = info.parentKey
            settings.contentType = info.contentType
            settings.timeout = timeout
            settings.resume = false
            settings.endpoint = images.endpoint
            let start = done
            if ImagePutCommand.isChunked(Int(entry.size), settings) {
                let temporary = NSTemporaryDirectory() + "homepwner-import-\(UUID().uuidString)"
                FileManager.default.createFile(atPath: temporary, contents: nil)
                defer { try? FileManager.default.removeItem(atPath: temporary) }
                guard let handle = FileHandle(forWritingAtPath: temporary) else { throw ExportError("\(temporary) cannot be written") }
                try export.tar.stream(entry) { try handle.write(contentsOf: Data($0)) }
                try handle.close()
                _ = try await ImagePutCommand.upload(temporary, size: Int(entry.size), key: info.key, settings, client: images) {
                    bar.update(start + $0)
                }
            } else {
                var put = PutImageRequest()
                put.key = info.key
                put.ownerKey = settings.owner
                put.kind = settings.kind
                put.parentKey = settings.parent
                put.contentType = settings.contentType
                put.data = try export.tar.bytes(entry)
                _ = try await images.call(
                    ImageServiceRPC.putImage, put,
                    options: .init(timeoutMilliseconds: max(timeout, 60_000), idempotencyKey: UUID().uuidString.lowercased()))
            }
            done += Int(entry.size)
            bar.update(done)
        }
        bar.finish()
        return infos.count
    }
}
