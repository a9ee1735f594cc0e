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
        usage: "homepwner backup DIR [--sign-key FILE] [--json] | homepwner backup verify DIR [--key FILE] [--snapshot NAME] [--json]",
        options: CommonOptions.endpoints + [
            OptionSpec(name: "sign-key", env: "HOMEPWNER_BACKUP_SIGN_KEY",
                       help: "sign the manifest with this Ed25519 secret key (homepwner keys sign-gen)", valueName: "FILE"),
            OptionSpec(name: "key", help: "verify: the public key the manifest must be signed with (NAME.sign.pub)", valueName: "FILE"),
            OptionSpec(name: "snapshot", help: "verify: the snapshot to check (default: the newest)", valueName: "NAME"),
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
        guard options.positionals.count == 1 else { return ItemCommand.usageError("backup", "expected one DIR") }
        let folder = options.positionals[0]
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
            let summary = try await run.run()
            if options.bool("json") {
                print(summary.json)
            } else {
                for problem in summary.problems { print("  \(problem)") }
                print(summary.line)
            }
            return summary.problems.isEmpty ? ExitCode.ok : ExitCode.failure
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

        var line: String {
            "backup \(snapshot): \(items) items, \(images) images; \(blobsFetched) blobs fetched ("
                + "\(ImageCommand.byteCount(bytesFetched))), \(blobsKept) already in the folder"
                + (problems.isEmpty ? "" : "; \(problems.count) problems")
        }

        var json: String {
            "{\"snapshot\": \(jsonString(snapshot)), \"items\": \(items), \"images\": \(images), \"blobs_fetched\": \(blobsFetched), "
                + "\"blobs_kept\": \(blobsKept), \"bytes_fetched\": \(bytesFetched), \"problems\": ["
                + problems.map(jsonString).joined(separator: ", ") + "]}"
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
            _ = try? await images.call(BackupServiceRPC.endBackup, endRequest(imageBackup.backupId), options: options)
            var manifest = BackupManifest(databases: [itemsFile, imagesFile])
            try manifest.readCounts(items: staging + "/items.db", images: staging + "/images.db")
            summary.items = manifest.itemCount
            summary.images = manifest.imageCount
            try await fetchBlobs(listedIn: staging + "/images.db", into: &manifest, summary: &summary)
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
        while offset < info.sizeBytes {
            var read = ReadSnapshotRequest()
            read.backupId = id
            read.offset = offset
            let chunk = try await client.call(BackupServiceRPC.readSnapshot, read, options: .init(timeoutMilliseconds: max(timeout, 60_000))).data
            guard !chunk.isEmpty else { throw BackupError("\(info.name): the service sent no bytes at offset \(offset) of \(info.sizeBytes)") }
            hash.update(chunk)
            try handle.write(contentsOf: chunk)
            offset += Int64(chunk.count)
        }
        try handle.synchronize()
        return BackupManifest.File(path: info.name, size: offset, sha256: hash.checksum(), schemaVersion: Int(info.schemaVersion))
    }

    /// Every image images.db lists: its bytes, by content, unless DIR has them already.
    private func fetchBlobs(listedIn imagesDB: String, into manifest: inout BackupManifest, summary: inout Summary) async throws {
        let rows = try BackupLayout.imageRows(imagesDB)
        let total = rows.reduce(Int64(0)) { $0 + $1.size }
        let bar = ProgressBar(total: Int(total), enabled: progress)
        var done: Int64 = 0
        var seen = Set<String>()
        for row in rows {
            defer {
                done += row.size
                bar.update(Int(done))
            }
            guard seen.insert(row.checksum).inserted else { continue }
            let path = BackupLayout.blobPath(folder, checksum: row.checksum)
            manifest.blobs.append(.init(path: BackupLayout.relative(path, to: folder), size: row.size, sha256: row.checksum))
            if let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value, size == row.size {
                summary.blobsKept += 1
                continue
            }
            var info = ImageInfo()
            info.key = row.key
            info.sizeBytes = row.size
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let partial = path + ".partial"
            FileManager.default.createFile(atPath: partial, contents: nil)
            guard let handle = FileHandle(forWritingAtPath: partial) else { throw BackupError("cannot write \(partial)") }
            let read = try await BlobRead.hash(info, images: images, timeout: timeout) { bytes in
                try handle.write(contentsOf: Data(bytes))
            }
            try handle.synchronize()
            try handle.close()
            if let checksum = read.checksum, checksum == row.checksum {
                try? FileManager.default.removeItem(atPath: path)
                try FileManager.default.moveItem(atPath: partial, toPath: path)
                summary.blobsFetched += 1
                summary.bytesFetched += read.bytes
            } else {
                try? FileManager.default.removeItem(atPath: partial)
                manifest.blobs.removeLast()
                let why = read.problem ?? read.checksum.map { "its bytes hash to \($0), not its recorded \(row.checksum)" } ?? "deleted during the backup"
                summary.problems.append("image \(row.key): not copied: \(why)")
            }
        }
        bar.finish()
    }
}

struct BackupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
