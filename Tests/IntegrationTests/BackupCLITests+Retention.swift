import Clients
import Digest
import Foundation
import Harness
import Proto
import RPC
import Testing

/// A blob damaged on the service's disk, found by the backup (not copied) and by verify; and
/// retention (`--keep-daily`, `--keep-weekly`, `backup prune`).
extension BackupCLITests {
    @Test func aBlobCorruptedOnTheServicesDiskIsNotCopiedAndIsReportedByBackupVerifyAndRestore() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let sound = try await FsckCLITests.itemWithPhoto(clients, try ImageServiceRPCTests.photo("Landscape_3.jpg"))
        let photo = try ImageServiceRPCTests.photo("Portrait_6.jpg")
        let damaged = try await FsckCLITests.itemWithPhoto(clients, photo)
        var stat = StatImageRequest()
        stat.key = damaged.image
        let checksum = try await clients.images.call(ImageServiceRPC.statImage, stat).checksum
        let handle = try #require(FileHandle(forUpdatingAtPath: FsckCLITests.blobPath(harness, damaged.image)))
        try handle.seek(toOffset: UInt64(photo.count / 2))
        try handle.write(contentsOf: Data([photo[photo.count / 2] ^ 0x10]))
        try handle.close()
        try harness.restart(.imageService)  // no cached copy hides the disk

        let backup = harness.dataDirectory + "/../backup"
        let run = try await Self.homepwner(["backup", backup, "--json"], harness)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["blobs_fetched"] as? Int == 1, "\(run.stdout)")
        let problems = summary?["problems"] as? [String] ?? []
        #expect(problems.count == 1 && problems.first?.hasPrefix("image \(damaged.image): not copied: ") == true, "\(problems)")
        // Not copied silently: no file holds its bytes, and the manifest says so.
        #expect(!FileManager.default.fileExists(atPath: backup + "/blobs/sha256/" + checksum.dropFirst(7).prefix(2) + "/" + checksum.dropFirst(7)))
        let snapshot = try #require(try FileManager.default.contentsOfDirectory(atPath: backup + "/snapshots").first)
        let manifest = try String(contentsOfFile: backup + "/snapshots/\(snapshot)/manifest.json", encoding: .utf8)
        #expect(manifest.contains("\"not_copied\"") && manifest.contains(damaged.image), "\(manifest)")

        let verified = try await Self.homepwner(["backup", "verify", backup], harness)
        #expect(verified.status == 1, "\(verified.stdout)")
        #expect(verified.stdout.contains("image \(damaged.image) (\(checksum)): not in this backup: "), "\(verified.stdout)")
        // `homepwner verify` re-hashes the originals and finds it too.
        let history = try await CLITests.homepwner(["verify"], harness: harness)
        #expect(history.status == 1 && history.stdout.contains("item \(damaged.item) photo \(damaged.image): "), "\(history.stdout)")

        let refused = try await Self.homepwner(["restore", backup, "--data-dir", harness.dataDirectory + "/../r1"], harness)
        #expect(refused.status == 1 && refused.stderr.contains("--allow-missing"), "\(refused.stderr)")
        let restored = harness.dataDirectory + "/../r2"
        let allowed = try await Self.homepwner(["restore", backup, "--data-dir", restored, "--allow-missing"], harness)
        #expect(allowed.status == 0 && allowed.stdout.contains("and 1 images; 1 without their bytes"), "\(allowed.stdout)\(allowed.stderr)")
        let sound0 = try #require(FileManager.default.contents(atPath: restored + "/images/blobs/\(sound.image.prefix(2))/\(sound.image)"))
        #expect([UInt8](sound0) == (try ImageServiceRPCTests.photo("Landscape_3.jpg")))
        #expect(!FileManager.default.fileExists(atPath: restored + "/images/blobs/\(damaged.image.prefix(2))/\(damaged.image)"))
    }

    @Test func retentionKeepsTheNewestOfEachDayAndWeekAndRemovesBlobsNoKeptSnapshotLists() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let backup = harness.dataDirectory + "/../backup"
        _ = try await FsckCLITests.itemWithPhoto(clients, try ImageServiceRPCTests.photo("Landscape_3.jpg"))
        let first = try await Self.homepwner(["backup", backup], harness)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        // Older snapshots, as if made on earlier days: copies of the first, renamed, one of them
        // listing a blob only it has (a photo since deleted).
        let snapshots = backup + "/snapshots"
        let first0 = try #require(try FileManager.default.contentsOfDirectory(atPath: snapshots).first)
        let made = "20261207T120000Z"  // Monday of ISO week 2026-W50
        try FileManager.default.moveItem(atPath: snapshots + "/" + first0, toPath: snapshots + "/" + made)
        let older = [
            "20261101T090000Z", "20261115T090000Z", "20261116T080000Z", "20261116T200000Z", "20261130T100000Z", "20261201T100000Z",
        ]
        for name in older { try FileManager.default.copyItem(atPath: snapshots + "/" + made, toPath: snapshots + "/" + name) }
        let gone = BackupLayoutTestSupport.addBlob(backup, snapshot: "20261101T090000Z", bytes: Array("a photo since deleted".utf8))
        // A leftover of an interrupted backup.
        try FileManager.default.createDirectory(atPath: snapshots + "/20261202T000000Z.partial", withIntermediateDirectories: true)

        let dry = try await Self.homepwner(["backup", "prune", backup, "--keep-daily", "2", "--keep-weekly", "2", "--dry-run"], harness)
        #expect(dry.status == 0 && dry.stdout.contains("kept 2 snapshots, removed 5"), "\(dry.stdout)\(dry.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: snapshots).count == 8)
        #expect(FileManager.default.fileExists(atPath: gone))

        // Daily 2: 1207 and 1201. Weekly 2: W50 (1207) and W49 (1201, newer than 1130): the same two.
        // With --keep-weekly 4 the newest of W47 (1116T20) and W46 (1115) stay too.
        let pruned = try await Self.homepwner(["backup", "--keep-daily", "2", "--keep-weekly", "4", "prune", backup, "--json"], harness)
        #expect(pruned.status == 0, "\(pruned.stdout)\(pruned.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(pruned.stdout.utf8)) as? [String: Any]
        let kept = result?["kept"] as? [String] ?? []
        #expect(kept == ["20261115T090000Z", "20261116T200000Z", "20261201T100000Z", made], "\(pruned.stdout)")
        #expect(result?["removed"] as? [String] == ["20261101T090000Z", "20261116T080000Z", "20261130T100000Z"], "\(pruned.stdout)")
        #expect(result?["blobs_removed"] as? Int == 1 && result?["partials_removed"] as? Int == 1, "\(pruned.stdout)")
        #expect(!FileManager.default.fileExists(atPath: gone))
        #expect(try FileManager.default.contentsOfDirectory(atPath: snapshots).sorted() == kept.sorted())
        // What is kept still verifies, every snapshot of it.
        for name in kept {
            let verified = try await Self.homepwner(["backup", "verify", backup, "--snapshot", name], harness)
            #expect(verified.status == 0, "\(name): \(verified.stdout)")
        }
        // A backup with retention prunes after itself; a second prune or backup at once is refused while one holds the lock.
        let again = try await Self.homepwner(["backup", backup, "--keep-daily", "1"], harness)
        #expect(again.status == 0 && again.stdout.contains("retention: kept 1 snapshots"), "\(again.stdout)\(again.stderr)")
        let lock = open(backup + "/lock", O_RDWR)
        #expect(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0)
        let busy = try await Self.homepwner(["backup", backup], harness)
        #expect(busy.status == 1 && busy.stderr.contains("another 'homepwner backup' or 'backup prune' is using"), "\(busy.stderr)")
        close(lock)
    }
}

/// Writes what a snapshot's manifest lists, for retention tests.
enum BackupLayoutTestSupport {
    /// Stores `bytes` as a blob and lists it in the snapshot's manifest; returns the blob's path.
    static func addBlob(_ folder: String, snapshot: String, bytes: [UInt8]) -> String {
        let hex = sha256Hex(bytes)
        let relative = "blobs/sha256/\(hex.prefix(2))/\(hex)"
        try? FileManager.default.createDirectory(atPath: folder + "/blobs/sha256/\(hex.prefix(2))", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: folder + "/" + relative, contents: Data(bytes))
        let path = folder + "/snapshots/\(snapshot)/manifest.json"
        if let data = FileManager.default.contents(atPath: path),
            var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        {
            var blobs = object["blobs"] as? [[String: Any]] ?? []
            blobs.append(["path": relative, "size": bytes.count, "sha256": "sha256:" + hex])
            object["blobs"] = blobs
            if let out = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]) {
                FileManager.default.createFile(atPath: path, contents: out)
            }
        }
        return folder + "/" + relative
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String {
        var hash = SHA256()
        hash.update(bytes)
        return String(hash.checksum().dropFirst(7))
    }
}
