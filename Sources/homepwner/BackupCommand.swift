import Digest
import Foundation
import Proto
import RPC
import Runtime
import Signing
import SQLite

/// `homepwner backup DIR`: an online backup of both services into DIR, over their RPC
/// connections (docs/protocol.md §18). `homepwner backup verify DIR` checks one offline.
///
/// DIR holds `blobs/sha256/<2 hex>/<64 hex>` (every image's bytes by content, shared by all the
/// backups in DIR, so a second backup fetches only what is new) and `snapshots/<UTC time>/`
/// with `items.db`, `images.db` and `manifest.json` (every file with its size and SHA-256).
enum BackupCommand {
    static let parser = OptionParser(
        command: "backup",
        summary: "Backs both services up into DIR while they keep serving: a consistent copy of each database and every "
            + "image's bytes (checked against its SHA-256, stored by content, so the next backup into DIR fetches only new "
            + "ones), with a manifest. 'backup verify DIR' checks a backup offline.",
        usage: "homepwner backup DIR [--sign-key FILE] [--keep-daily N --keep-weekly N] [--json]\n"
            + "       homepwner backup verify DIR [--key FILE] [--snapshot NAME] [--json]\n"
            + "       homepwner backup prune DIR --keep-daily N --keep-weekly N [--dry-run] [--json]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "sign-key", env: "HOMEPWNER_BACKUP_SIGN_KEY",
                       help: "sign the manifest with this Ed25519 secret key (homepwner keys sign-gen)", valueName: "FILE"),
            OptionSpec(name: "key", help: "verify: the public key the manifest must be signed with (NAME.sign.pub)", valueName: "FILE"),
            OptionSpec(name: "snapshot", help: "verify: the snapshot to check (default: the newest)", valueName: "NAME"),
            OptionSpec(name: "keep-daily", help: "after the backup (or with prune): keep the newest snapshot of each of the last N days that have one",
                       valueName: "N"),
            OptionSpec(name: "keep-weekly", help: "… and of each of the last N ISO weeks; the newest snapshot is always kept, and blobs "
                           + "no kept snapshot lists are removed", valueName: "N"),
            OptionSpec(name: "dry-run", help: "prune: say what would be removed, remove nothing", isFlag: true),
            OptionSpec(name: "no-progress", help: "no progress bar", isFlag: true),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) async -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        if options.positionals.first == "verify" {
            guard options.positionals.count == 2 else { return ItemCommand.usageError("backup verify", "expected one DIR") }
            return BackupVerify.run(
                folder: options.positionals[1], snapshot: options["snapshot"], key: options["key"], json: options.bool("json"))
        }
        var retention: BackupRetention?
        if options["keep-daily"] != nil || options["keep-weekly"] != nil {
            guard let daily = Int(options["keep-daily"] ?? "0"), daily >= 0, let weekly = Int(options["keep-weekly"] ?? "0"), weekly >= 0 else {
                return ItemCommand.usageError("backup", "--keep-daily and --keep-weekly take a count (0 or more)")
            }
            retention = BackupRetention(daily: daily, weekly: weekly)
        }
        if options.positionals.first == "prune" {
            guard options.positionals.count == 2 else { return ItemCommand.usageError("backup prune", "expected one DIR") }
            guard let retention else {
                return ItemCommand.usageError("backup prune", "say what to keep: --keep-daily N and/or --keep-weekly N")
            }
            return prune(options.positionals[1], retention, dryRun: options.bool("dry-run"), json: options.bool("json"))
        }
        guard options.positionals.count == 1 else { return ItemCommand.usageError("backup", "expected one DIR") }
        let folder = options.positionals[0]
        do {
            try BackupLock.acquire(folder)
            // Holding the lock, any snapshot still .partial is what a killed backup left.
            let snapshots = BackupLayout.snapshots(folder)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? [] where name.hasSuffix(".partial") {
                try FileManager.default.removeItem(atPath: snapshots + "/" + name)
            }
        } catch {
            printError("homepwner backup: \(error)")
            return ExitCode.failure
        }
        var signer: SigningKeyPair?
        if let file = options["sign-key"] {
            do {
                signer = try SigningKeyPair.load(secretFile: file)
            } catch {
                printError("homepwner backup: --sign-key: \(error)")
                return ExitCode.usage
            }
        }
        return await CommonOptions.withClientExitCode(options, service: "item", command: "backup") { items, timeout in
            let context = try CLIContext.make(options)
            let images = try RPCClient(context: context, endpoint: try options.string("image"))
            defer { images.close() }
            var run = BackupRun(
                folder: folder, items: items, images: images, timeout: timeout, signer: signer,
                progress: !options.bool("no-progress") && !options.bool("json") && isatty(2) == 1)
            var summary = try await run.run()
            // A backup that could not copy everything does not count towards retention.
            if let retention, summary.problems.isEmpty { summary.pruned = try retention.prune(folder: folder, dryRun: false) }
            if options.bool("json") {
                print(summary.json)
            } else {
                for problem in summary.problems { print("  \(problem)") }
                print(summary.line)
                if let pruned = summary.pruned { print("retention: " + pruned.line) }
            }
            return summary.problems.isEmpty ? ExitCode.ok : ExitCode.failure
        }
    }

    static func prune(_ folder: String, _ retention: BackupRetention, dryRun: Bool, json: Bool) -> Int32 {
        do {
            guard FileManager.default.fileExists(atPath: BackupLayout.snapshots(folder)) else {
                throw BackupError("\(folder) holds no backup (no \(BackupLayout.snapshots(folder)))")
            }
            try BackupLock.acquire(folder)
            let pruned = try retention.prune(folder: folder, dryRun: dryRun)
            print(json ? pruned.json : (dryRun ? "would have " : "") + pruned.line)
            return ExitCode.ok
        } catch {
            printError("homepwner backup prune: \(error)")
            return ExitCode.failure
        }
    }
}

/// One backup: begin on both services (the image service holds deletes from then on), copy
/// items.db, then images.db, fetch every blob images.db lists that DIR lacks, write the
/// manifest, end both.
struct BackupRun {
    let folder: String
    let items: RPCClient
    let images: RPCClient
    let timeout: UInt32
    let signer: SigningKeyPair?
    let progress: Bool

    struct Summary {
        var snapshot = ""
        var items: Int64 = 0
        var images: Int64 = 0
        var blobsFetched = 0
        var blobsKept = 0
        var bytesFetched: Int64 = 0
        var problems: [String] = []
        var pruned: BackupRetention.Pruned?

        var line: String {
            "backup \(snapshot): \(items) items, \(images) images; \(blobsFetched) blobs fetched ("
                + "\(ImageCommand.byteCount(bytesFetched))), \(blobsKept) already in the folder"
                + (problems.isEmpty ? "" : "; \(problems.count) problems")
        }

        var json: String {
            "{\"snapshot\": \(jsonString(snapshot)), \"items\": \(items), \"images\": \(images), \"blobs_fetched\": \(blobsFetched), "
                + "\"blobs_kept\": \(blobsKept), \"bytes_fetched\": \(bytesFetched), \"problems\": ["
                + problems.map(jsonString).joined(separator: ", ") + "]" + (pruned.map { ", \"retention\": \($0.json)" } ?? "") + "}"
        }
    }

    var options: CallOptions { .init(timeoutMilliseconds: timeout) }

    mutating func run() async throws -> Summary {
        var summary = Summary()
        summary.snapshot = BackupLayout.snapshotName(Date())
        let snapshotFolder = BackupLayout.snapshots(folder) + "/" + summary.snapshot
        let staging = snapshotFolder + ".partial"
        try? FileManager.default.removeItem(atPath: staging)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        // Deletes are held from before items.db is copied until images.db is: every image an
        // item lists in the copy of items.db is in the copy of images.db.
        let imageBackup = try await images.call(BackupServiceRPC.beginBackup, BeginBackupRequest(), options: options)
        var itemBackup: BeginBackupResponse?
        do {
            itemBackup = try await items.call(BackupServiceRPC.beginBackup, BeginBackupRequest(), options: options)
            let itemsFile = try await copyDatabase(items, itemBackup!.backupId, to: staging)
            let imagesFile = try await copyDatabase(images, imageBackup.backupId, to: staging)
            var manifest = BackupManifest(databases: [itemsFile, imagesFile])
            try manifest.readCounts(items: staging + "/items.db", images: staging + "/images.db")
            summary.items = manifest.itemCount
            summary.images = manifest.imageCount
            // Deletes stay held until every blob the copy of images.db lists is fetched: an image
            // deleted in between would leave a restored item listing a photo with no bytes.
            let hold = BackupHold(images: images, backupId: imageBackup.backupId, timeout: timeout)
            do {
                try await fetchBlobs(listedIn: staging + "/images.db", into: &manifest, summary: &summary)
            } catch {
                hold.stop()
                throw error
            }
            if let lapsed = await hold.finish() { summary.problems.append(lapsed) }
            _ = try? await images.call(BackupServiceRPC.endBackup, endRequest(imageBackup.backupId), options: options)
            try manifest.write(to: staging + "/" + BackupLayout.manifestName)
            if let signer { try BackupSignature.sign(manifest: staging + "/" + BackupLayout.manifestName, with: signer) }
            try FileManager.default.moveItem(atPath: staging, toPath: snapshotFolder)
        } catch {
            _ = try? await images.call(BackupServiceRPC.endBackup, endRequest(imageBackup.backupId), options: options)
            if let itemBackup { _ = try? await items.call(BackupServiceRPC.endBackup, endRequest(itemBackup.backupId), options: options) }
            try? FileManager.default.removeItem(atPath: staging)
            throw error
        }
        _ = try? await items.call(BackupServiceRPC.endBackup, endRequest(itemBackup!.backupId), options: options)
        return summary
    }

    private func endRequest(_ id: String) -> EndBackupRequest {
        var request = EndBackupRequest()
        request.backupId = id
        return request
    }

    /// Snapshots a service's database and reads it into `folder`, hashing it.
    private func copyDatabase(_ client: RPCClient, _ id: String, to folder: String) async throws -> BackupManifest.File {
        var snapshot = SnapshotDatabaseRequest()
        snapshot.backupId = id
        let info = try await client.call(
            BackupServiceRPC.snapshotDatabase, snapshot, options: .init(timeoutMilliseconds: max(timeout, 300_000)))
        let path = folder + "/" + info.name
        FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw BackupError("cannot write \(path)") }
        defer { try? handle.close() }
        var hash = SHA256()
        var offset: Int64 = 0
        if progress { printError("copying \(info.name) (\(ImageCommand.byteCount(info.sizeBytes)))") }
        let bar = ProgressBar(total: Int(info.sizeBytes), enabled: progress)
        defer { bar.finish() }
        while offset < info.sizeBytes {
            var read = ReadSnapshotRequest()
            read.backupId = id
            read.offset = offset
            let chunk = try await client.call(BackupServiceRPC.readSnapshot, read, options: .init(timeoutMilliseconds: max(timeout, 60_000))).data
            guard !chunk.isEmpty else { throw BackupError("\(info.name): the service sent no bytes at offset \(offset) of \(info.sizeBytes)") }
            hash.update(chunk)
            try handle.write(contentsOf: chunk)
            offset += Int64(chunk.count)
            bar.update(Int(offset))
        }
        try handle.synchronize()
        return BackupManifest.File(path: info.name, size: offset, sha256: hash.checksum(), schemaVersion: Int(info.schemaVersion))
    }

    /// How many images are fetched at once: the service reads one while the folder writes
    /// another, and one slow disk read does not stall the rest.
    static let blobsInFlight = 4

    /// One image whose bytes the folder lacks.
    struct BlobJob: Sendable {
        let key: String
        let checksum: String
        let size: Int64
        let path: String
    }

    /// Every image images.db lists: its bytes, by content, unless DIR has them already. An image
    /// whose bytes cannot be read whole or do not hash to its checksum is not copied: the
    /// manifest lists it under `not_copied`, and `backup verify` reports it.
    private func fetchBlobs(listedIn imagesDB: String, into manifest: inout BackupManifest, summary: inout Summary) async throws {
        var jobs: [BlobJob] = []
        var seen = Set<String>()
        var listed: [String: BackupManifest.File] = [:]
        var order: [String] = []
        for row in try BackupLayout.imageRows(imagesDB) where seen.insert(row.checksum).inserted {
            let path = BackupLayout.blobPath(folder, checksum: row.checksum)
            order.append(row.checksum)
            listed[row.checksum] = .init(path: BackupLayout.relative(path, to: folder), size: row.size, sha256: row.checksum)
            if let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value, size == row.size {
                summary.blobsKept += 1
            } else {
                jobs.append(BlobJob(key: row.key, checksum: row.checksum, size: row.size, path: path))
            }
        }
        let bar = ProgressBar(total: Int(jobs.reduce(Int64(0)) { $0 + $1.size }), enabled: progress)
        if progress && !jobs.isEmpty { printError("fetching \(jobs.count) images not yet in \(folder)") }
        var done: Int64 = 0
        let images = images
        let timeout = timeout
        // Fetched blobs keep their .partial names until one syncfs(2) has made them all durable,
        // then are renamed into place: one flush for the lot, not an fsync per blob, and a crash
        // never leaves a blob under its final name with bytes not on disk.
        var ready: [(partial: String, path: String)] = []
        defer { for file in ready { try? FileManager.default.removeItem(atPath: file.partial) } }
        try await withThrowingTaskGroup(of: (BlobJob, BlobOutcome).self) { group in
            var next = 0
            func start() {
                guard next < jobs.count else { return }
                let job = jobs[next]
                next += 1
                group.addTask { (job, try await Self.fetch(job, images: images, timeout: timeout)) }
            }
            for _ in 0..<Self.blobsInFlight { start() }
            while let (job, outcome) = try await group.next() {
                switch outcome {
                case .fetched(let bytes, let partial):
                    summary.blobsFetched += 1
                    summary.bytesFetched += bytes
                    ready.append((partial, job.path))
                case .notCopied(let why):
                    listed[job.checksum] = nil
                    manifest.notCopied.append(.init(key: job.key, sha256: job.checksum, why: why))
                    summary.problems.append("image \(job.key): not copied: \(why)")
                }
                done += job.size
                bar.update(Int(done))
                start()
            }
        }
        bar.finish()
        if !ready.isEmpty {
            try Self.syncFilesystem(of: folder)
            for file in ready {
                // rename(2) replaces a stale file of the wrong size in one step.
                guard rename(file.partial, file.path) == 0 else {
                    throw BackupError("cannot move \(file.partial) to \(file.path): \(String(cString: strerror(errno)))")
                }
            }
            ready = []
            try Self.syncFilesystem(of: folder)  // the renames
        }
        manifest.blobs = order.compactMap { listed[$0] }
    }

    enum BlobOutcome: Sendable {
        case fetched(bytes: Int64, partial: String)
        case notCopied(why: String)
    }

    /// Fetches one image into `<path>.partial.<random>`, hashing it as it comes; kept only when
    /// every byte arrived and they hash to the checksum (the caller renames it into place).
    static func fetch(_ job: BlobJob, images: RPCClient, timeout: UInt32) async throws -> BlobOutcome {
        var info = ImageInfo()
        info.key = job.key
        info.sizeBytes = job.size
        try FileManager.default.createDirectory(atPath: (job.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let partial = job.path + ".partial." + UUID().uuidString.prefix(8)
        FileManager.default.createFile(atPath: partial, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: partial) else { throw BackupError("cannot write \(partial)") }
        let read: BlobRead.Outcome
        do {
            read = try await BlobRead.hash(info, images: images, timeout: timeout) { bytes in
                try handle.write(contentsOf: Data(bytes))
            }
            try handle.close()
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        guard let checksum = read.checksum, checksum == job.checksum else {
            try? FileManager.default.removeItem(atPath: partial)
            return .notCopied(why: read.problem
                ?? read.checksum.map { "its bytes hash to \($0), not its recorded \(job.checksum)" }
                ?? "deleted during the backup")
        }
        return .fetched(bytes: read.bytes, partial: partial)
    }

    /// syncfs(2) of the filesystem holding `folder` (sync(2) where the C library lacks it).
    static func syncFilesystem(of folder: String) throws {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, Self.syncfs(fd) == 0 else {
            let why = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw BackupError("cannot flush \(folder) to disk: \(why)")
        }
        close(fd)
    }

    /// glibc declares syncfs only under _GNU_SOURCE, which Swift's Glibc module does not set:
    /// looked up by name once (RTLD_DEFAULT).
    private static let syncfs: @convention(c) (Int32) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "syncfs") else {
            return { _ in
                sync()
                return 0
            }
        }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()
}

/// Keeps the image service's backup open (and so its deletes held) while the blobs are fetched,
/// which may take longer than its idle limit: every 30 s a one-byte ReadSnapshot names it.
final class BackupHold: Sendable {
    private let task: Task<String?, Never>

    init(images: RPCClient, backupId: String, timeout: UInt32) {
        task = Task {
            var read = ReadSnapshotRequest()
            read.backupId = backupId
            read.length = 1
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(30))
                if Task.isCancelled { break }
                do throws(RPCError) {
                    _ = try await images.call(BackupServiceRPC.readSnapshot, read, options: .init(timeoutMilliseconds: max(timeout, 30_000)))
                } catch {
                    guard error.code == .notFound else { continue }  // a slow answer: the next one renews
                    return "the image service ended backup \(backupId) before every image was fetched (\(error.message)): "
                        + "images deleted since may be missing from this backup; run it again"
                }
            }
            return nil
        }
    }

    func stop() { task.cancel() }

    /// Stops renewing; says what went wrong if the hold lapsed.
    func finish() async -> String? {
        task.cancel()
        return await task.value
    }
}

struct BackupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
