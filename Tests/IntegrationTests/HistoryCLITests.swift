import Clients
import Foundation
import Harness
import Proto
import RPC
import SQLite
import Testing

/// `homepwner history` and `homepwner verify` through the real executable against both
/// services on the harness: the history as printed, a clean verify, then a photo's bytes
/// flipped on disk and an entry edited in items.db, each found and named.
@Suite struct HistoryCLITests {
    @Test func historyPrintsEachChangeAndVerifyFindsAFlippedPhotoAndAnEditedEntry() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let photo = try ImageServiceRPCTests.photo("Landscape_3.jpg")
        let lamp = try await FsckCLITests.itemWithPhoto(clients, photo)
        let chair = try await FsckCLITests.itemWithPhoto(clients, photo)
        let stat = try await { () async throws -> ImageInfo in
            var request = StatImageRequest()
            request.key = lamp.image
            return try await clients.images.call(ImageServiceRPC.statImage, request)
        }()

        let history = try await CLITests.homepwner(["history", lamp.item], harness: harness)
        #expect(history.status == 0, "\(history.stderr)")
        let lines = history.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(history.stdout)")  // two entries and the head
        #expect(lines.first?.contains("  local  item.created  Lamp (\(lamp.item), version 1)  sha256:") == true, "\(history.stdout)")
        #expect(lines.dropFirst().first?.contains("photo.attached  Lamp (\(lamp.item), version 2) photo \(lamp.image) \(stat.checksum)") == true)
        #expect(lines.last?.hasPrefix("head: entry 4 sha256:") == true, "\(history.stdout)")
        let json = try await CLITests.homepwner(["history", "--json", "--limit", "1"], harness: harness)
        let first = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(first?["action"] as? String == "item.created" && first?["seq"] as? String == "1", "\(json.stdout)")

        let clean = try await CLITests.homepwner(["verify"], harness: harness)
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        #expect(clean.stdout.contains("history: 4 entries checked, head entry 4 sha256:"), "\(clean.stdout)")
        #expect(clean.stdout.contains("photos: 2 checked") && clean.stdout.hasSuffix("intact\n"), "\(clean.stdout)")

        // One photo's bytes flipped on disk (the service restarted so no cached copy hides it).
        let handle = try #require(FileHandle(forUpdatingAtPath: FsckCLITests.blobPath(harness, chair.image)))
        try handle.seek(toOffset: UInt64(photo.count / 2))
        try handle.write(contentsOf: Data([photo[photo.count / 2] ^ 0xFF]))
        try handle.close()
        try harness.restart(.imageService)
        let flipped = try await CLITests.homepwner(["verify"], harness: harness)
        #expect(flipped.status == 1, "\(flipped.stdout)\(flipped.stderr)")
        #expect(flipped.stdout.contains("item \(chair.item) photo \(chair.image): "), "\(flipped.stdout)")
        #expect(flipped.stdout.hasSuffix("NOT intact\n"))

        // The lamp's creation rewritten in items.db, its hash left as it was.
        let db = try Database(path: harness.dataDirectory + "/items/items.db")
        let bytes = try #require(try db.scalar("SELECT entry FROM history WHERE seq = 1")?.blobValue)
        var forged = try HistoryEntry(serializedBytes: bytes)
        forged.item?.name = "Tiffany lamp"
        try db.execute("UPDATE history SET entry = ? WHERE seq = 1", [.blob(forged.serializedBytes())])
        try db.close()
        let edited = try await CLITests.homepwner(["verify", "--no-bytes", "--json"], harness: harness)
        #expect(edited.status == 1, "\(edited.stdout)\(edited.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(edited.stdout.utf8)) as? [String: Any]
        let chain = report?["history"] as? [String: Any]
        #expect(report?["intact"] as? Bool == false)
        #expect(chain?["first_break_seq"] as? String == "1", "\(edited.stdout)")
        #expect((chain?["problem"] as? String)?.hasPrefix("entry 1 was changed after it was written") == true, "\(edited.stdout)")
    }
}
