import Digest
import Foundation
import Runtime
import Signing

/// `homepwner backup verify DIR`: offline, every file the manifest lists re-hashed; a missing
/// file, a wrong size or a flipped byte is reported naming the file.
enum BackupVerify {
    /// What checking a snapshot found.
    struct Findings {
        var snapshot = ""
        var filesChecked = 0
        var bytesChecked: Int64 = 0
        var problems: [String] = []
        /// "signed by ed25519:…, checked", "signed by …, not checked (give --key)" or "not signed".
        var signature = "not signed"
        /// Images the backup could not copy (each also a problem).
        var notCopied: [BackupManifest.NotCopied] = []
    }

    static func check(folder: String, snapshot name: String?, key: String? = nil) throws -> Findings {
        let snapshot = try BackupLayout.snapshot(in: folder, named: name)
        var findings = Findings()
        findings.snapshot = (snapshot as NSString).lastPathComponent
        let manifestPath = snapshot + "/" + BackupLayout.manifestName
        if let key {
            let publicKey = try SigningPublicKey.load(file: key)
            if let problem = BackupSignature.problem(manifest: manifestPath, key: publicKey) {
                findings.problems.append(problem)
                findings.signature = "signature does not hold"
            } else {
                findings.signature = "signed by \(publicKey.fingerprint), checked"
            }
        } else if let text = FileManager.default.contents(atPath: BackupSignature.path(of: manifestPath)) {
            let signer = String(decoding: text, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? "?"
            findings.signature = "signed by \(signer), not checked (give --key)"
        }
        let manifest = try BackupManifest.read(manifestPath)
        findings.notCopied = manifest.notCopied
        for missing in manifest.notCopied {
            findings.problems.append("image \(missing.key) (\(missing.sha256)): not in this backup: \(missing.why)")
        }
        for (file, base) in manifest.databases.map({ ($0, snapshot) }) + manifest.blobs.map({ ($0, folder) }) {
            let path = base + "/" + file.path
            findings.filesChecked += 1
            guard let handle = FileHandle(forReadingAtPath: path) else {
                findings.problems.append("\(path): missing")
                continue
            }
            defer { try? handle.close() }
            var hash = SHA256()
            var size: Int64 = 0
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                chunk.withUnsafeBytes { hash.update($0) }
                size += Int64(chunk.count)
            }
            findings.bytesChecked += size
            if size != file.size {
                findings.problems.append("\(path): \(size) bytes, the manifest says \(file.size)")
            } else if hash.checksum() != file.sha256 {
                findings.problems.append("\(path): its bytes hash to \(hash.checksum()), the manifest says \(file.sha256)")
            }
        }
        return findings
    }

    static func run(folder: String, snapshot: String?, key: String?, json: Bool) -> Int32 {
        do {
            let findings = try check(folder: folder, snapshot: snapshot, key: key)
            if json {
                print("{\"snapshot\": \(jsonString(findings.snapshot)), \"files\": \(findings.filesChecked), \"bytes\": \(findings.bytesChecked), "
                    + "\"signature\": \(jsonString(findings.signature)), \"intact\": \(findings.problems.isEmpty), \"problems\": [" + findings.problems.map(jsonString).joined(separator: ", ") + "]}")
            } else {
                for problem in findings.problems { print(problem) }
                print("\(findings.snapshot): \(findings.filesChecked) files, \(ImageCommand.byteCount(findings.bytesChecked)) checked, \(findings.signature): "
                    + (findings.problems.isEmpty ? "intact" : "\(findings.problems.count) problems"))
            }
            return findings.problems.isEmpty ? ExitCode.ok : ExitCode.failure
        } catch {
            printError("homepwner backup verify: \(error)")
            return ExitCode.failure
        }
    }
}

/// `homepwner restore DIR --data-dir D`: offline, a verified snapshot into an empty data folder
/// laid out as the services keep theirs (`items/items.db`, `images/images.db`,
/// `images/blobs/<2>/<key>`); the suite started on D serves the same items and bytes.
enum RestoreCommand {
    static let parser = OptionParser(
        command: "restore",
        summary: "Restores a backup made by 'homepwner backup' into an empty data folder, after checking every file "
            + "against the manifest. Start the suite on that folder (ops/run --data-dir D, or the compose volume).",
        usage: "homepwner restore DIR --data-dir D [--key FILE] [--snapshot NAME] [--allow-missing]",
        options: [
            OptionSpec(name: "data-dir", help: "the data folder to restore into: must be empty or not exist", valueName: "D"),
            OptionSpec(name: "snapshot", help: "the snapshot to restore (default: the newest)", valueName: "NAME"),
            OptionSpec(name: "key", help: "the public key the manifest must be signed with (NAME.sign.pub)", valueName: "FILE"),
            OptionSpec(name: "allow-missing",
                       help: "restore a snapshot whose backup could not copy some images (its manifest's not_copied): their rows are "
                           + "restored without bytes, and 'homepwner fsck' lists them as damaged", isFlag: true),
            OptionSpec(name: "json", help: "a JSON summary", isFlag: true),
        ],
        allowsPositionals: true)

    static func run(_ arguments: [String]) -> Int32 {
        guard let options = HomepwnerCLI.parse(parser, arguments) else { return HomepwnerCLI.exitCodeOverride }
        guard options.positionals.count == 1, let target = options["data-dir"] else {
            return ItemCommand.usageError("restore", "expected DIR and --data-dir D")
        }
        let folder = options.positionals[0]
        do {
            if let existing = try? FileManager.default.contentsOfDirectory(atPath: target), !existing.isEmpty {
                throw BackupError(
                    "\(target) is not empty (it holds \(existing.sorted().prefix(3).joined(separator: ", "))\(existing.count > 3 ? ", …" : "")); restore into an empty folder")
            }
            let findings = try BackupVerify.check(folder: folder, snapshot: options["snapshot"], key: options["key"])
            let allowMissing = options.bool("allow-missing")
            let blocking = findings.problems.count - (allowMissing ? findings.notCopied.count : 0)
            guard blocking == 0 else {
                for problem in findings.problems { printError(problem) }
                let hint = findings.notCopied.count == findings.problems.count
                    ? "the backup could not copy \(findings.notCopied.count) images; restore another snapshot with --snapshot, or this one without their bytes with --allow-missing"
                    : "restore another snapshot with --snapshot"
                throw BackupError("\(findings.snapshot) does not verify (\(findings.problems.count) problems); \(hint)")
            }
            let snapshot = try BackupLayout.snapshot(in: folder, named: options["snapshot"])
            let missing = Set(findings.notCopied.map(\.sha256))
            let images = try restore(snapshot: snapshot, folder: folder, into: target, skipping: missing)
            if options.bool("json") {
                print("{\"snapshot\": \(jsonString(findings.snapshot)), \"data_dir\": \(jsonString(target)), \"images\": \(images), "
                    + "\"images_without_bytes\": \(findings.notCopied.count)}")
            } else {
                print("restored \(findings.snapshot) into \(target): items.db, images.db and \(images) images"
                    + (missing.isEmpty ? "" : "; \(findings.notCopied.count) without their bytes (homepwner fsck lists them)"))
            }
            return ExitCode.ok
        } catch {
            printError("homepwner restore: \(error)")
            return ExitCode.failure
        }
    }

    /// Copies the databases and every image's bytes into `target`; returns the image count.
    static func restore(snapshot: String, folder: String, into target: String, skipping missing: Set<String> = []) throws -> Int {
        let manager = FileManager.default
        for sub in ["items", "images/blobs"] { try manager.createDirectory(atPath: target + "/" + sub, withIntermediateDirectories: true) }
        try copy(snapshot + "/items.db", to: target + "/items/items.db")
        try copy(snapshot + "/images.db", to: target + "/images/images.db")
        let rows = try BackupLayout.imageRows(target + "/images/images.db")
        for row in rows where !missing.contains(row.checksum) {
            let source = BackupLayout.blobPath(folder, checksum: row.checksum)
            let fan = target + "/images/blobs/" + row.key.prefix(2)
            try manager.createDirectory(atPath: fan, withIntermediateDirectories: true)
            try copy(source, to: fan + "/" + row.key)
        }
        return rows.count - rows.filter { missing.contains($0.checksum) }.count
    }

    /// Copies a file and makes it durable.
    private static func copy(_ source: String, to destination: String) throws {
        guard FileManager.default.fileExists(atPath: source) else { throw BackupError("\(source) is missing from the backup") }
        try FileManager.default.copyItem(atPath: source, toPath: destination)
        if let handle = FileHandle(forUpdatingAtPath: destination) {
            try handle.synchronize()
            try handle.close()
        }
    }
}
