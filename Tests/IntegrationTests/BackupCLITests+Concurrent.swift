import Clients
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Synchronization
import Testing

extension BackupCLITests {
    /// Items with photos are created and deleted all through a backup. Restored, every item
    /// acknowledged before the backup began (and never deleted) is there with its photo's bytes,
    /// and every photo any restored item lists exists: no half of a write, no dangling photo.
    @Test func aBackupTakenDuringCreatesPutsAndDeletesRestoresEveryAcknowledgedWrite() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        let photos = ["Landscape_1.jpg", "Landscape_2.jpg", "Portrait_3.jpg", "Portrait_4.jpg"].map { try? ImageServiceRPCTests.photo($0) }
            .compactMap { $0 }
        #expect(photos.count == 4)
        var kept: [(item: String, image: String, photo: Int)] = []
        for index in 0..<6 {
            let made = try await FsckCLITests.itemWithPhoto(clients, photos[index % photos.count])
            kept.append((made.item, made.image, index % photos.count))
        }

        // A writer that keeps creating items with photos and deleting every other one.
        let stop = Atomic<Bool>(false)
        let writes = Atomic<Int>(0)
        let writer = Task {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                round += 1
                let made = try await FsckCLITests.itemWithPhoto(clients, photos[round % photos.count])
                writes.add(1, ordering: .relaxed)
                if round % 2 == 0 {
                    var delete = DeleteItemRequest()
                    delete.key = made.item
                    _ = try await clients.items.call(ItemServiceRPC.deleteItem, delete)
                }
            }
            return round
        }
        // Under way before the backup begins.
        while writes.load(ordering: .relaxed) < 4 { try await Task.sleep(for: .milliseconds(10)) }
        let backup = harness.dataDirectory + "/../backup"
        let result = try await Self.homepwner(["backup", backup, "--json"], harness)
        stop.store(true, ordering: .relaxed)
        let rounds = try await writer.value
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(rounds >= 4)

        let restored = harness.dataDirectory + "/../restored"
        let restore = try await Self.homepwner(["restore", backup, "--data-dir", restored], harness)
        #expect(restore.status == 0, "\(restore.stdout)\(restore.stderr)")
        let sockets = restored + "-sockets"
        try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: true)
        let copy = try Harness(dataDirectory: restored, endpoints: .ipc(in: sockets), logger: Logger(label: "restored", level: .warning))
        defer { copy.shutdown() }
        try copy.start(.imageService)
        try copy.start(.itemService)
        let restoredClients = try copy.clients()
        defer { restoredClients.close() }
        for entry in kept {
            var get = GetItemRequest()
            get.key = entry.item
            let item = try await restoredClients.items.call(ItemServiceRPC.getItem, get)
            #expect(item.photoKeys == [entry.image])
            var image = GetImageRequest()
            image.key = entry.image
            #expect(try await restoredClients.images.call(ImageServiceRPC.getImage, image).data == photos[entry.photo])
        }
        // Every photo any restored item lists is there, whole.
        var list = ListItemsRequest()
        list.pageSize = 1000
        let items = try await restoredClients.items.call(ItemServiceRPC.listItems, list).items
        #expect(items.count >= kept.count)
        for item in items {
            for key in item.photoKeys {
                var stat = StatImageRequest()
                stat.key = key
                let info = try await restoredClients.images.call(ImageServiceRPC.statImage, stat)
                #expect(info.sizeBytes > 0, "item \(item.key) photo \(key)")
            }
        }
        let fsck = try await CLITests.homepwner(["fsck", "--grace", "0"], harness: copy)
        // Photos stored between the two copies and not yet attached may be orphans; nothing may be missing or damaged.
        #expect(!fsck.stdout.contains("missing-photo") && !fsck.stdout.contains("damaged-image"), "\(fsck.stdout)")
    }
}
