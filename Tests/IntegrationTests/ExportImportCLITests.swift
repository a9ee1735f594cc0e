import Clients
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing

/// `homepwner export` and `import` through the real executable between two fresh installations
/// on the harness (docs/protocol.md §19): a round trip equal by content, a re-import that changes
/// nothing, a conflict that writes nothing, and archives that are refused naming the entry.
@Suite struct ExportImportCLITests {
    static func homepwner(_ arguments: [String], _ harness: Harness) async throws -> CLITests.Run {
        try await CLITests.homepwner(arguments, harness: harness)
    }

    static func started() throws -> (Harness, HomepwnerClients) {
        let harness = try Harness()
        try harness.start(.imageService)
        try harness.start(.itemService)
        return (harness, try harness.clients())
    }

    /// Two locations (one inside the other), a category, an item with two photos (roles, a
    /// primary that is not the first), one with the first photo's bytes again, one with none.
    static func inventory(_ clients: HomepwnerClients) async throws -> [String] {
        var house = CreateLocationRequest()
        house.name = "House"
        let top = try await clients.items.call(ItemServiceRPC.createLocation, house)
        var room = CreateLocationRequest()
        room.name = "Study"
        room.parentKey = top.key
        room.notes = "north side"
        let study = try await clients.items.call(ItemServiceRPC.createLocation, room)
        var category = CreateCategoryRequest()
        category.name = "Electronics"
        category.depreciation = .straightLine
        category.usefulLifeYears = 5
        category.floorPercent = 10
        let electronics = try await clients.items.call(ItemServiceRPC.createCategory, category)

        var lamp = CreateItemRequest()
        lamp.name = "Lamp"
        lamp.brand = "Lumen"
        lamp.tags = ["light", "Desk"]
        lamp.locationKey = study.key
        lamp.categoryKey = electronics.key
        lamp.purchasePrice = Money(currency: "USD", minorUnits: 4999)
        lamp.purchaseDate = "2024-05-07"
        var field = CustomField()
        field.name = "colour"
        field.value = "green"
        lamp.customFields = [field]
        let first = try await clients.items.call(ItemServiceRPC.createItem, lamp)
        let photo = try await Self.attach(clients, first.key, try ImageServiceRPCTests.photo("Landscape_3.jpg"))
        let receipt = try await Self.attach(clients, first.key, try ImageServiceRPCTests.photo("Portrait_6.jpg"), role: .receipt)
        var primary = SetPrimaryPhotoRequest()
        primary.itemKey = first.key
        primary.imageKey = receipt
        _ = try await clients.items.call(ItemServiceRPC.setPrimaryPhoto, primary)
        var update = UpdateItemRequest()
        update.key = first.key
        update.updateMask = ["notes"]
        update.notes = "bought at the fair"
        _ = try await clients.items.call(ItemServiceRPC.updateItem, update)
        _ = photo

        var shade = CreateItemRequest()
        shade.name = "Shade"
        shade.serialNumber = "8G7Z"
        shade.valueInDollars = 12
        let second = try await clients.items.call(ItemServiceRPC.createItem, shade)
        _ = try await Self.attach(clients, second.key, try ImageServiceRPCTests.photo("Landscape_3.jpg"))
        var chair = CreateItemRequest()
        chair.name = "Chair"
        chair.quantity = 6
        let third = try await clients.items.call(ItemServiceRPC.createItem, chair)
        return [first.key, second.key, third.key]
    }

    static func attach(_ clients: HomepwnerClients, _ item: String, _ bytes: [UInt8], role: PhotoRole = .photo) async throws -> String {
        var put = PutImageRequest()
        put.ownerKey = item
        put.data = bytes
        let image = try await clients.images.call(ImageServiceRPC.putImage, put)
        var attach = AttachPhotoRequest()
        attach.itemKey = item
        attach.imageKey = image.key
        attach.role = role
        _ = try await clients.items.call(ItemServiceRPC.attachPhoto, attach)
        return image.key
    }

    /// The archive unpacked by the system's tar (which also proves it a plain tar).
    static func unpack(_ archive: String) throws -> String {
        let folder = archive + ".unpacked"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tar")
        process.arguments = ["-xf", archive, "-C", folder]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "tar -xf \(archive)")
        return folder
    }

    /// A JSON array file's objects without the fields that are this installation's own.
    static func content(_ folder: String, _ file: String, dropping: Set<String>) throws -> [NSDictionary] {
        let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + file))
        let array = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return array.map { object in NSDictionary(dictionary: object.filter { !dropping.contains($0.key) }) }
    }

    static func json(_ run: CLITests.Run) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8))) as? [String: Any] ?? [:]
    }

    static func historyHead(_ clients: HomepwnerClients) async throws -> HistoryHead {
        var request = GetHistoryRequest()
        request.pageSize = 1
        return try await clients.items.call(HistoryServiceRPC.getHistory, request).head ?? HistoryHead()
    }

    @Test func anExportImportsIntoAFreshInstallationEqualByContentAndAReimportChangesNothing() async throws {
        let (source, sourceClients) = try Self.started()
        defer { source.shutdown() }
        defer { sourceClients.close() }
        let keys = try await Self.inventory(sourceClients)
        let first = source.dataDirectory + "/../first.tar"
        let exported = try await Self.homepwner(["export", first, "--json"], source)
        #expect(exported.status == 0, "\(exported.stdout)\(exported.stderr)")
        let summary = Self.json(exported)
        #expect(summary["items"] as? Int == 3 && summary["locations"] as? Int == 2 && summary["categories"] as? Int == 1, "\(exported.stdout)")
        // Three attached photos, two contents: stored once each.
        #expect(summary["images"] as? Int == 3 && summary["photos"] as? Int == 2, "\(exported.stdout)")
        let sourceHead = try await Self.historyHead(sourceClients)

        let (target, targetClients) = try Self.started()
        defer { target.shutdown() }
        defer { targetClients.close() }
        let imported = try await Self.homepwner(["import", first, "--json"], target)
        #expect(imported.status == 0, "\(imported.stdout)\(imported.stderr)")
        let outcome = Self.json(imported)
        #expect(outcome["imported"] as? Bool == true && outcome["items_created"] as? Int == 3, "\(imported.stdout)")
        #expect(outcome["locations_created"] as? Int == 2 && outcome["categories_created"] as? Int == 1, "\(imported.stdout)")
        #expect(outcome["photos_attached"] as? Int == 3 && outcome["photos_put"] as? Int == 3, "\(imported.stdout)")

        // Same keys, same content: the target's export equals the source's, file by file.
        let second = target.dataDirectory + "/../second.tar"
        let reexported = try await Self.homepwner(["export", second], target)
        #expect(reexported.status == 0, "\(reexported.stdout)\(reexported.stderr)")
        let (a, b) = (try Self.unpack(first), try Self.unpack(second))
        let own: Set<String> = ["version", "created_at_ms", "updated_at_ms"]
        let itemsA = try Self.content(a, "items.json", dropping: ["version"])
        #expect(itemsA.count == 3 && itemsA.map { $0["key"] as? String } == keys.map { Optional($0) })
        #expect(itemsA == (try Self.content(b, "items.json", dropping: ["version"])))
        #expect(try Self.content(a, "locations.json", dropping: own) == (try Self.content(b, "locations.json", dropping: own)))
        #expect(try Self.content(a, "categories.json", dropping: own) == (try Self.content(b, "categories.json", dropping: own)))
        let imageFields: Set<String> = ["created_at_ms"]
        #expect(try Self.content(a, "images.json", dropping: imageFields).count == 3)
        #expect(Set(try Self.content(a, "images.json", dropping: imageFields)) == Set(try Self.content(b, "images.json", dropping: imageFields)))
        let photosA = try FileManager.default.contentsOfDirectory(atPath: a + "/photos").sorted()
        let photosB = try FileManager.default.contentsOfDirectory(atPath: b + "/photos").sorted()
        #expect(photosA.count == 2 && photosA == photosB)
        let originals = [Data(try ImageServiceRPCTests.photo("Landscape_3.jpg")), Data(try ImageServiceRPCTests.photo("Portrait_6.jpg"))]
        for name in photosA {
            let bytesA = try Data(contentsOf: URL(fileURLWithPath: a + "/photos/" + name))
            #expect(bytesA == (try Data(contentsOf: URL(fileURLWithPath: b + "/photos/" + name))), "photos/\(name)")
            #expect(originals.contains(bytesA))
        }

        // The target's history records the import, with the source's head, and holds.
        var history = GetHistoryRequest()
        history.pageSize = 100
        let entries = try await targetClients.items.call(HistoryServiceRPC.getHistory, history).entries
        #expect(entries.map(\.action) == ["location.imported", "location.imported", "category.imported", "item.imported", "item.imported", "item.imported"])
        #expect(entries.allSatisfy { $0.importSource?.hash == sourceHead.hash && $0.importSource?.seq == sourceHead.seq })
        let verified = try await targetClients.items.call(HistoryServiceRPC.verifyHistory, VerifyHistoryRequest())
        #expect(verified.intact, "\(verified.problem) \(verified.unrecorded)")
        // Every imported photo hashes as its item records it, and both services agree (no orphan).
        let photos = try await Self.homepwner(["verify"], target)
        #expect(photos.status == 0, "\(photos.stdout)\(photos.stderr)")
        let fsck = try await FsckCLITests.fsck(target)
        #expect(fsck.status == 0, "\(fsck.stdout)\(fsck.stderr)")

        // Again: everything is there with the same content, so nothing is written.
        let headBefore = try await Self.historyHead(targetClients)
        let again = try await Self.homepwner(["import", first], target)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("nothing to import: 3 items, 2 locations, 1 categories already here"), "\(again.stdout)")
        let headAfter = try await Self.historyHead(targetClients)
        #expect(headAfter.hash == headBefore.hash)
    }

    @Test func aConflictIsReportedAndNothingIsWrittenUnlessSkipped() async throws {
        let (source, sourceClients) = try Self.started()
        defer { source.shutdown() }
        defer { sourceClients.close() }
        let keys = try await Self.inventory(sourceClients)
        let archive = source.dataDirectory + "/../export.tar"
        let exported = try await Self.homepwner(["export", archive], source)
        #expect(exported.status == 0, "\(exported.stdout)\(exported.stderr)")

        let (target, targetClients) = try Self.started()
        defer { target.shutdown() }
        defer { targetClients.close() }
        // The shade's key, held here by another thing.
        var other = CreateItemRequest()
        other.key = keys[1]
        other.name = "Kettle"
        _ = try await targetClients.items.call(ItemServiceRPC.createItem, other)
        let headBefore = try await Self.historyHead(targetClients)
        let dry = try await Self.homepwner(["import", archive, "--dry-run"], target)
        #expect(dry.status == 1, "\(dry.stdout)\(dry.stderr)")
        #expect(dry.stdout.contains("dry run: would import 2 items, 2 locations, 1 categories, 2 photos; 0 items"), "\(dry.stdout)")
        #expect(dry.stdout.contains("conflict: item \(keys[1])"), "\(dry.stdout)")
        let refused = try await Self.homepwner(["import", archive], target)
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stdout.contains("conflict: item \(keys[1]) exists here with other name, serial_number, value_in_dollars, photo_keys"), "\(refused.stdout)")
        #expect(refused.stdout.contains("nothing imported: 1 conflicts"), "\(refused.stdout)")
        let stats = try await targetClients.items.call(ItemServiceRPC.stats, ItemStatsRequest())
        #expect(stats.itemCount == 1)
        let listed = try await targetClients.images.call(ImageServiceRPC.listImages, ListImagesRequest())
        #expect(listed.images.isEmpty, "no photo is put before the conflicts are resolved")
        #expect(try await Self.historyHead(targetClients).hash == headBefore.hash)
        let locations = try await targetClients.items.call(ItemServiceRPC.listLocations, ListLocationsRequest())
        #expect(locations.locations.isEmpty)

        // With --skip-conflicts the rest comes in; the kettle stays a kettle.
        let skipped = try await Self.homepwner(["import", archive, "--skip-conflicts", "--json"], target)
        #expect(skipped.status == 0, "\(skipped.stdout)\(skipped.stderr)")
        let outcome = Self.json(skipped)
        #expect(outcome["items_created"] as? Int == 2 && (outcome["conflicts"] as? [Any])?.count == 1, "\(skipped.stdout)")
        var get = GetItemRequest()
        get.key = keys[1]
        #expect(try await targetClients.items.call(ItemServiceRPC.getItem, get).name == "Kettle")
        get.key = keys[0]
        let lamp = try await targetClients.items.call(ItemServiceRPC.getItem, get)
        #expect(lamp.name == "Lamp" && lamp.photos.map(\.role) == [.photo, .receipt] && lamp.primaryPhotoKey == lamp.photoKeys[1])
    }

    @Test func aTamperedOrHostileArchiveIsRefusedNamingTheEntry() async throws {
        let (source, sourceClients) = try Self.started()
        defer { source.shutdown() }
        defer { sourceClients.close() }
        _ = try await Self.inventory(sourceClients)
        let folder = source.dataDirectory + "/.."
        let archive = folder + "/export.tar"
        let exported = try await Self.homepwner(["export", archive], source)
        #expect(exported.status == 0, "\(exported.stdout)\(exported.stderr)")

        let (target, targetClients) = try Self.started()
        defer { target.shutdown() }
        defer { targetClients.close() }
        // One flipped byte in a photo's bytes: refused, naming the photo's entry.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: archive)))
        let header = try #require(Self.offset(of: Array("photos/".utf8), in: bytes))
        let name = String(decoding: bytes[header..<header + 71], as: UTF8.self)
        bytes[header + 512 + 1000] ^= 0x01
        let flipped = folder + "/flipped.tar"
        try Data(bytes).write(to: URL(fileURLWithPath: flipped))
        let damaged = try await Self.homepwner(["import", flipped], target)
        #expect(damaged.status == 1, "\(damaged.stdout)\(damaged.stderr)")
        #expect(damaged.stderr.contains("\(name): its bytes hash to sha256:"), "\(damaged.stderr)")
        #expect(damaged.stderr.contains("nothing was imported"), "\(damaged.stderr)")

        // Cut short: truncated.
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: archive)))
        let short = folder + "/short.tar"
        try Data(original[0..<(header + 512 + 300)]).write(to: URL(fileURLWithPath: short))
        let truncated = try await Self.homepwner(["import", short], target)
        #expect(truncated.status == 1 && truncated.stderr.contains("(\(name)): says") && truncated.stderr.contains("truncated"), "\(truncated.stderr)")

        // A path out of the folder, an absolute one, a link, an entry no export has.
        for (entry, type, expected) in [
            ("../evil.json", "0", "refused"), ("/etc/passwd", "0", "refused"), ("items.json", "2", "not a regular file"),
            ("notes.txt", "0", "unknown entry"),
        ] {
            let hostile = folder + "/hostile.tar"
            try Data(Self.tar(entry, type: type, Array("{}".utf8))).write(to: URL(fileURLWithPath: hostile))
            let run = try await Self.homepwner(["import", hostile], target)
            #expect(run.status == 1 && run.stderr.contains("entry 1 (\(entry))") && run.stderr.contains(expected), "\(entry): \(run.stderr)")
        }
        let stats = try await targetClients.items.call(ItemServiceRPC.stats, ItemStatsRequest())
        #expect(stats.itemCount == 0)
        #expect(try await Self.historyHead(targetClients).seq == 0)
    }

    static func offset(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    /// A one-entry ustar archive, written here rather than by the code under test.
    static func tar(_ name: String, type: String, _ content: [UInt8]) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 512)
        func put(_ text: String, _ at: Int) { for (index, byte) in text.utf8.enumerated() { header[at + index] = byte } }
        put(name, 0)
        put("0000644", 100)
        put("0000000", 108)
        put("0000000", 116)
        let size = String(content.count, radix: 8)
        put(String(repeating: "0", count: 11 - size.count) + size, 124)
        put("00000000000", 136)
        put("        ", 148)
        put(type, 156)
        put("ustar", 257)
        put("00", 263)
        let sum = String(header.reduce(0) { $0 + Int($1) }, radix: 8)
        put(String(repeating: "0", count: 6 - sum.count) + sum, 148)
        header[154] = 0
        let padded = content + [UInt8](repeating: 0, count: (512 - content.count % 512) % 512)
        return header + padded + [UInt8](repeating: 0, count: 1024)
    }
}
