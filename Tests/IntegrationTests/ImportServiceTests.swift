import CurveAuth
import Foundation
import Harness
import Proto
import RPC
import RPCTestSupport
import Runtime
import Testing
import ZMQ

/// ImportService on the harness's item-service (docs/protocol.md §19): a commit is one
/// transaction (one bad item leaves nothing of the others), a restart forgets what was staged,
/// a photo the image service lacks stops the commit, and only admin may import.
@Suite struct ImportServiceTests {
    static func item(_ name: String, location: String = "") -> Item {
        var item = Item()
        item.key = UUID().uuidString.lowercased()
        item.name = name
        item.quantity = 1
        item.locationKey = location
        item.createdAtMs = 1_700_000_000_000
        item.updatedAtMs = 1_700_000_000_001
        return item
    }

    static func begin(_ client: RPCClient) async throws -> String {
        var begin = BeginImportRequest()
        var head = HistoryHead()
        head.seq = 7
        head.hash = "sha256:" + String(repeating: "ab", count: 32)
        begin.sourceHead = head
        return try await client.call(ImportServiceRPC.beginImport, begin).importId
    }

    static func commit(_ client: RPCClient, _ id: String, dryRun: Bool = false) async throws -> CommitImportResponse {
        var commit = CommitImportRequest()
        commit.importId = id
        commit.dryRun = dryRun
        return try await client.call(ImportServiceRPC.commitImport, commit, options: .init(retry: .none))
    }

    static func nothingThere(_ client: RPCClient) async throws {
        let stats = try await client.call(ItemServiceRPC.stats, ItemStatsRequest())
        #expect(stats.itemCount == 0)
        #expect(try await client.call(ItemServiceRPC.listLocations, ListLocationsRequest()).locations.isEmpty)
        var history = GetHistoryRequest()
        history.pageSize = 1
        #expect(try await client.call(HistoryServiceRPC.getHistory, history).head?.seq ?? 0 == 0)
    }

    @Test func oneBadItemLeavesNothingOfTheOthersAndARestartForgetsTheStaging() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }

        var location = Location()
        location.key = UUID().uuidString.lowercased()
        location.name = "Attic"
        let blank = Self.item("  ")
        var add = AddImportRequest()
        add.importId = try await Self.begin(clients.items)
        add.locations = [location]
        add.items = [Self.item("Lamp", location: location.key), Self.item("Chair"), blank]
        let staged = try await clients.items.call(ImportServiceRPC.addImport, add)
        #expect(staged.items == 3 && staged.locations == 1)
        let plan = try await Self.commit(clients.items, add.importId, dryRun: true)
        #expect(!plan.committed && plan.itemsCreated == 3 && plan.locationsCreated == 1 && plan.conflicts.isEmpty)
        // The third item fails CreateItem's checks inside the transaction: the location and the
        // two items before it, written in the same transaction, go with it.
        let refused = await rpcError { try await Self.commit(clients.items, add.importId) }
        #expect(refused?.code == .invalidArgument, "\(String(describing: refused))")
        #expect(refused?.message.hasPrefix("item \(blank.key): name must not be empty or blank") == true, "\(refused?.message ?? "")")
        #expect(refused?.message.hasSuffix("nothing was imported") == true)
        try await Self.nothingThere(clients.items)

        // Staged, then the service stops before the commit: nothing of it was written, and
        // the import is gone.
        add.importId = try await Self.begin(clients.items)
        add.items = [Self.item("Lamp", location: location.key), Self.item("Chair")]
        _ = try await clients.items.call(ImportServiceRPC.addImport, add)
        try harness.restart(.itemService)
        _ = try await clients.items.call(ItemServiceRPC.stats, ItemStatsRequest(), options: patient)
        let forgotten = await rpcError { try await Self.commit(clients.items, add.importId) }
        #expect(forgotten?.code == .notFound && forgotten?.message.contains("begin a new one") == true, "\(String(describing: forgotten))")
        try await Self.nothingThere(clients.items)

        // Begun again, it commits whole, each subject recorded as imported with the source's head.
        add.importId = try await Self.begin(clients.items)
        _ = try await clients.items.call(ImportServiceRPC.addImport, add)
        let done = try await Self.commit(clients.items, add.importId)
        #expect(done.committed && done.itemsCreated == 2 && done.locationsCreated == 1 && done.head?.seq == 3)
        var get = GetItemRequest()
        get.key = add.items[0].key
        let lamp = try await clients.items.call(ItemServiceRPC.getItem, get)
        #expect(lamp.locationKey == location.key && lamp.createdAtMs == 1_700_000_000_000 && lamp.updatedAtMs == 1_700_000_000_001 && lamp.version == 1)
        var history = GetHistoryRequest()
        history.pageSize = 10
        let entries = try await clients.items.call(HistoryServiceRPC.getHistory, history).entries
        #expect(entries.map(\.action) == ["location.imported", "item.imported", "item.imported"])
        #expect(entries.allSatisfy { $0.importSource?.seq == 7 })
        // A committed import has ended.
        let ended = await rpcError { try await Self.commit(clients.items, add.importId) }
        #expect(ended?.code == .notFound)
    }

    @Test func aPhotoTheImageServiceDoesNotHoldStopsTheCommitNamingIt() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        try harness.start(.imageService)
        try harness.start(.itemService)
        let clients = try harness.clients()
        defer { clients.close() }
        var item = Self.item("Lamp")
        let photo = UUID().uuidString.lowercased()
        item.photoKeys = [photo]
        item.primaryPhotoKey = photo
        var attached = ItemPhoto()
        attached.imageKey = photo
        item.photos = [attached]
        var add = AddImportRequest()
        add.importId = try await Self.begin(clients.items)
        add.items = [item]
        // Without its checksum the item is refused on arrival, naming the photo.
        let unchecked = await rpcError { try await clients.items.call(ImportServiceRPC.addImport, add) }
        #expect(unchecked?.code == .invalidArgument && unchecked?.message.contains("photo \(photo) has no checksum") == true, "\(String(describing: unchecked))")
        var checksum = ImportPhoto()
        checksum.imageKey = photo
        checksum.checksum = "sha256:" + String(repeating: "0", count: 64)
        add.photos = [checksum]
        _ = try await clients.items.call(ImportServiceRPC.addImport, add)
        let refused = await rpcError { try await Self.commit(clients.items, add.importId) }
        #expect(refused?.code == .failedPrecondition, "\(String(describing: refused))")
        #expect(refused?.message.contains("photo \(photo) of item \(item.key) is not in the image service") == true, "\(refused?.message ?? "")")
        try await Self.nothingThere(clients.items)
    }

    @Test func onlyAdminMayImport() async throws {
        let folder = NSTemporaryDirectory() + "import-keys-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let serverKeys = try CurveKeyPair.generate()
        let reader = try CurveKeyPair.generate()
        let allowedFile = folder + "/allowed_keys"
        _ = try AllowedKeys.edit(file: allowedFile, create: true) { keys in
            try keys.allow(AllowedKey(role: .reader, publicKey: reader.publicKey, name: "dashboard"))
        }
        let logger = Logger(label: "import-keys", level: .warning)
        let (_, serverSecret) = try serverKeys.save(directory: folder, name: "server")
        let options = try OptionParser(command: "test", summary: "", options: TransportSecurity.options)
            .parse(["--server-secret-key", serverSecret, "--allowed-keys", allowedFile], environment: [:])
        let security = try #require(try TransportSecurity.load(options, logger: logger))
        let harness = try Harness(logger: logger, security: security)
        defer { harness.shutdown() }
        // All of it, as an executable runs: the ZAP handler that admits keys starts first.
        try harness.start()
        let context = try Context(ioThreads: 1)
        TransportSecurity(client: .init(keyPair: reader, serverKey: serverKeys.publicKey)).install(on: context)
        let client = try RPCClient(context: context, endpoint: harness.endpoints.itemRPC, configuration: .init(connectWaitMilliseconds: 700))
        defer { client.close() }
        // The reader reads (so it is connected and known) but may not begin an import.
        _ = try await client.call(ItemServiceRPC.stats, ItemStatsRequest(), options: patient)
        let refused = await rpcError { try await client.call(ImportServiceRPC.beginImport, BeginImportRequest(), options: .init(retry: .none)) }
        #expect(refused?.code == .permissionDenied, "\(String(describing: refused))")
        // The server's own key (admin) may.
        let admin = try harness.client(.itemService)
        defer { admin.close() }
        let begun = try await admin.call(ImportServiceRPC.beginImport, BeginImportRequest(), options: patient)
        #expect(!begun.importId.isEmpty)
    }
}
