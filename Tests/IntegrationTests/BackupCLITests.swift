import Clients
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing

/// `homepwner backup`, `backup verify` and `restore` through the real executable against both
/// services on the harness: a backup while they serve, an incremental one, a flipped byte
/// found offline, and a restore the suite then serves the same items and bytes from.
@Suite struct BackupCLITests {
    static func homepwner(_ arguments: [String], _ harness: Harness) async throws -> CLITests.Run {
        try await CLITests.homepwner(arguments, harness: harness)
    }

    @Test func aBackupRestoresToTheSameItemsAndBytesAndAFlippedByteIsFound() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let backup = harness.dataDirectory + "/../backup"
        let photos = [try ImageServiceRPCTests.photo("Landscape_3.jpg"), try ImageServiceRPCTests.photo("Portrait_6.jpg")]
        var made: [(item: String, image: String)] = []
        for photo in photos { made.append(try await FsckCLITests.itemWithPhoto(clients, photo)) }
        // The same bytes on a third item: stored once in the backup.
        made.append(try await FsckCLITests.itemWithPhoto(clients, photos[0]))

        let keys = harness.dataDirectory + "/../keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        let generated = try await Self.homepwner(["keys", "sign-gen", "backup", "--dir", keys], harness)
        #expect(generated.status == 0, "\(generated.stderr)")
        let first = try await Self.homepwner(["backup", backup, "--json", "--sign-key", keys + "/backup.sign.secret"], harness)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
        #expect(summary?["items"] as? Int == 3 && summary?["images"] as? Int == 3, "\(first.stdout)")
        #expect(summary?["blobs_fetched"] as? Int == 2 && summary?["blobs_kept"] as? Int == 0, "\(first.stdout)")

        // Incremental: one new photo is all the second fetches.
        made.append(try await FsckCLITests.itemWithPhoto(clients, try ImageServiceRPCTests.photo("Landscape_5.jpg")))
        try await Task.sleep(for: .milliseconds(1100))  // snapshots are named by the second
        let second = try await Self.homepwner(["backup", backup], harness)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("4 items, 4 images; 1 blobs fetched"), "\(second.stdout)")
        #expect(second.stdout.contains("2 already in the folder"), "\(second.stdout)")

        let verified = try await Self.homepwner(["backup", "verify", backup], harness)
        #expect(verified.status == 0 && verified.stdout.contains(": 5 files") && verified.stdout.hasSuffix("intact\n"), "\(verified.stdout)")
        #expect(verified.stdout.contains("not signed"), "\(verified.stdout)")  // the second backup was not signed
        // The first was: its signature holds with the public key, and not once its manifest changes.
        let snapshots = try FileManager.default.contentsOfDirectory(atPath: backup + "/snapshots").sorted()
        #expect(snapshots.count == 2)
        let signed = try await Self.homepwner(["backup", "verify", backup, "--snapshot", snapshots[0], "--key", keys + "/backup.sign.pub"], harness)
        #expect(signed.status == 0 && signed.stdout.contains("signed by ed25519:") && signed.stdout.contains(", checked: intact"), "\(signed.stdout)")
        let manifest = backup + "/snapshots/" + snapshots[0] + "/manifest.json"
        let original = try String(contentsOfFile: manifest, encoding: .utf8)
        try original.replacingOccurrences(of: "\"items\" : 3", with: "\"items\" : 2").write(toFile: manifest, atomically: true, encoding: .utf8)
        let forged = try await Self.homepwner(["backup", "verify", backup, "--snapshot", snapshots[0], "--key", keys + "/backup.sign.pub"], harness)
        #expect(forged.status == 1 && forged.stdout.contains("\(manifest): its signature does not verify with ed25519:"), "\(forged.stdout)")
        try original.write(toFile: manifest, atomically: true, encoding: .utf8)
        let unsigned = try await Self.homepwner(["backup", "verify", backup, "--key", keys + "/backup.sign.pub"], harness)
        #expect(unsigned.status == 1 && unsigned.stdout.contains("manifest.json.sig: missing"), "\(unsigned.stdout)")

        // Restore the newest into an empty folder; a non-empty one is refused.
        let restored = harness.dataDirectory + "/../restored"
        let refused = try await Self.homepwner(["restore", backup, "--data-dir", harness.dataDirectory], harness)
        #expect(refused.status == 1 && refused.stderr.contains("is not empty"), "\(refused.stderr)")
        let restore = try await Self.homepwner(["restore", backup, "--data-dir", restored], harness)
        #expect(restore.status == 0 && restore.stdout.contains("and 4 images"), "\(restore.stdout)\(restore.stderr)")
        let sockets = restored + "-sockets"
        try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: true)
        let copy = try Harness(dataDirectory: restored, endpoints: .ipc(in: sockets), logger: Logger(label: "restored", level: .warning))
        defer { copy.shutdown() }
        try copy.start(.imageService)
        try copy.start(.itemService)
        let restoredClients = try copy.clients()
        defer { restoredClients.close() }
        for (index, pair) in made.enumerated() {
            var get = GetItemRequest()
            get.key = pair.item
            let item = try await restoredClients.items.call(ItemServiceRPC.getItem, get)
            #expect(item.photoKeys == [pair.image])
            var image = GetImageRequest()
            image.key = pair.image
            let bytes = try await restoredClients.images.call(ImageServiceRPC.getImage, image).data
            let expected = index == 3 ? try ImageServiceRPCTests.photo("Landscape_5.jpg") : photos[index == 1 ? 1 : 0]
            #expect(bytes == expected, "photo \(index)")
        }
        let history = try await restoredClients.items.call(HistoryServiceRPC.verifyHistory, VerifyHistoryRequest())
        #expect(history.intact && history.entriesChecked == 8)

        // A flipped byte in the backup's blob: verify names the file.
        let blobs = try #require(FileManager.default.enumerator(atPath: backup + "/blobs")?.allObjects as? [String])
        let blob = backup + "/blobs/" + (try #require(blobs.filter { $0.count > 64 }.sorted().first))
        let handle = try #require(FileHandle(forUpdatingAtPath: blob))
        try handle.seek(toOffset: 1000)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: 1000)
        try handle.write(contentsOf: Data([byte ^ 0x01]))
        try handle.close()
        let damaged = try await Self.homepwner(["backup", "verify", backup], copy)
        #expect(damaged.status == 1, "\(damaged.stdout)")
        #expect(damaged.stdout.contains("\(blob): its bytes hash to sha256:"), "\(damaged.stdout)")
        let notRestored = try await Self.homepwner(["restore", backup, "--data-dir", restored + "-2"], copy)
        #expect(notRestored.status == 1 && notRestored.stderr.contains("does not verify"), "\(notRestored.stderr)")
    }

    @Test func anOpenBackupHoldsImageDeletesUntilItEnds() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        let clients = try harness.clients()
        defer { clients.close() }
        var put = PutImageRequest()
        put.data = try ImageServiceRPCTests.photo("Landscape_3.jpg")
        let image = try await clients.images.call(ImageServiceRPC.putImage, put)
        let begun = try await clients.images.call(BackupServiceRPC.beginBackup, BeginBackupRequest())
        #expect(begun.holdsDeletes && begun.service == "image-service")
        var delete = DeleteImageRequest()
        delete.key = image.key
        let held = await rpcError { try await clients.images.call(ImageServiceRPC.deleteImage, delete, options: .init(retry: .none)) }
        #expect(held?.code == .unavailable)
        #expect(held?.message.hasPrefix("a backup is running, and deletes wait until it ends") == true, "\(held?.message ?? "")")
        var snapshot = SnapshotDatabaseRequest()
        snapshot.backupId = begun.backupId
        let info = try await clients.images.call(BackupServiceRPC.snapshotDatabase, snapshot)
        #expect(info.name == "images.db" && info.sizeBytes > 0)
        var end = EndBackupRequest()
        end.backupId = begun.backupId
        #expect(try await clients.images.call(BackupServiceRPC.endBackup, end).ended)
        #expect(try await clients.images.call(BackupServiceRPC.endBackup, end).ended == false)
        _ = try await clients.images.call(ImageServiceRPC.deleteImage, delete)
        let gone = await rpcError { try await clients.images.call(BackupServiceRPC.snapshotDatabase, snapshot) }
        #expect(gone?.code == .notFound)
    }

    private func rpcError(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? RPCError
        }
    }
}
