import Digest
import Foundation
import Proto
import RPC
import Testing
import TestSupport
import ZMQ

/// The real executables on a disk that fails when the test says (the fault shim, LD_PRELOAD):
/// a full disk is answered RESOURCE_EXHAUSTED with nothing half stored, and the service takes
/// writes again once there is room, without a restart; an fsync that fails stops the service
/// (what it had in flight answered UNAVAILABLE, never "not stored" while its row may be), and
/// after the restart every acknowledged write is there, whole.
@Suite(.serialized) struct DiskFaultTests {
    static let context = try! Context()
    static let once = CallOptions(timeoutMilliseconds: 20_000, retry: .none)

    /// A service process on ipc endpoints in a folder of its own, its disk's faults following `rules`.
    final class Service: @unchecked Sendable {
        let name: String
        let folder: String
        let rpc: String
        let rules: FaultShim.Rules
        let logPath: String
        var process: Process

        init(_ name: String, folder: String, rules: FaultShim.Rules, shim: Bool = true) throws {
            self.name = name
            self.folder = folder
            self.rpc = "ipc://\(folder)/\(name).sock"
            self.rules = rules
            self.logPath = "\(folder)/\(name).log"
            process = try Self.launch(name, folder: folder, rpc: rpc, rules: rules, logPath: logPath, shim: shim)
        }

        static func launch(_ name: String, folder: String, rpc: String, rules: FaultShim.Rules, logPath: String, shim: Bool) throws -> Process {
            let process = Process()
            process.executableURL = ExecutableTests.binDirectory.appendingPathComponent(name)
            var arguments = ["--rpc", rpc, "--events", "ipc://\(folder)/\(name)-events.sock", "--data-dir", folder + "/data"]
            if name == "item-service" { arguments += ["--image-service", "ipc://\(folder)/no-image-service.sock"] }
            process.arguments = arguments
            process.environment = shim
                ? try FaultShim.environment(rules: rules)
                : ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HOMEPWNER_") }
            if !FileManager.default.fileExists(atPath: logPath) { FileManager.default.createFile(atPath: logPath, contents: nil) }
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            try log.seekToEnd()
            process.standardError = log
            process.standardOutput = log
            try process.run()
            return process
        }

        /// Starts it again on the same data, without the shim: a disk that works again.
        func restartHealthy() throws {
            process = try Self.launch(name, folder: folder, rpc: rpc, rules: rules, logPath: logPath, shim: false)
        }

        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        func client() throws -> RPCClient {
            try RPCClient(context: DiskFaultTests.context, endpoint: rpc, configuration: .init(connectWaitMilliseconds: 500))
        }

        func stop() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hp-faults-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The status code a call ended with (nil: it succeeded) and its message.
    static func outcome(_ call: () async throws -> Void) async -> (StatusCode?, String) {
        do {
            try await call()
            return (nil, "")
        } catch {
            let failure = error as? RPCError
            return (failure?.code ?? .unknown, failure?.message ?? "\(error)")
        }
    }

    static func put(_ client: RPCClient, _ bytes: [UInt8], key: String) async throws -> ImageInfo {
        var request = PutImageRequest()
        request.key = key
        request.data = bytes
        request.contentType = "video/mp4"
        return try await client.call(ImageServiceRPC.putImage, request, options: once)
    }

    static func get(_ client: RPCClient, _ key: String) async throws -> [UInt8] {
        var request = GetImageRequest()
        request.key = key
        return try await client.call(ImageServiceRPC.getImage, request, options: patient).data
    }

    /// Bytes the image service takes as a movie (an MP4 `ftyp` box, then filler).
    static func movie(_ size: Int, seed: UInt8) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8)
        bytes += (0..<(size - bytes.count)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
        return bytes
    }

    static func files(_ path: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []).filter { name in
            var directory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path + "/" + name, isDirectory: &directory) && !directory.boolValue
        }
    }

    static func key() -> String { UUID().uuidString.lowercased() }

    /// A fresh folder with an empty rules file and image-service on it (the fault shim loaded),
    /// answering; `body` gets the service, its rules and a client, all closed after it.
    static func withImageService(_ body: (Service, FaultShim.Rules, RPCClient) async throws -> Void) async throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rules = FaultShim.Rules(in: folder)
        try rules.set([])
        let service = try Service("image-service", folder: folder, rules: rules)
        defer { service.stop() }
        let client = try service.client()
        defer { client.close() }
        _ = try await client.call(HealthRPC.check, HealthCheckRequest(), options: patient)
        try await body(service, rules, client)
    }

    @Test func aFullDiskUnderAPutIsResourceExhaustedLeavesNothingAndPassesOnceThereIsRoomAgain() async throws {
        try await Self.withImageService { service, rules, client in
            let before = Self.movie(300_000, seed: 1), beforeKey = Self.key()
            #expect(try await Self.put(client, before, key: beforeKey).sizeBytes == 300_000)

            let images = service.folder + "/data/images"
            for place in ["/images/tmp/", "images.db-wal"] {
                // The blob's own bytes, then the index's log: each full in turn.
                try rules.set(["write \(place) ENOSPC"])
                let key = Self.key(), bytes = Self.movie(200_000, seed: 2)
                let (code, message) = await Self.outcome { _ = try await Self.put(client, bytes, key: key) }
                #expect(code == .resourceExhausted, "\(place): \(String(describing: code)) \(message)")
                #expect(message.contains("disk is full"), "\(place): \(message)")
                #expect(service.log.contains("faultshim: write"), "the fault did not happen:\n\(service.log)")
                // Nothing half stored: no temporary file, no blob, no row.
                #expect(Self.files(images + "/tmp").isEmpty, "\(Self.files(images + "/tmp"))")
                #expect(!Self.files(images + "/blobs").contains { $0.hasSuffix(key) })
                let (missing, _) = await Self.outcome { _ = try await Self.get(client, key) }
                #expect(missing == .notFound)
                // Room again: the same put passes, on the same process.
                try rules.set([])
                #expect(try await Self.put(client, bytes, key: key).checksum == SHA256.checksum(bytes))
                #expect(try await Self.get(client, key) == bytes)
            }
            #expect(try await Self.get(client, beforeKey) == before)
            #expect(service.process.isRunning)
        }
    }

    @Test func aFullDiskUnderAChunkedUploadIsResourceExhaustedAndTheUploadResumesOnceThereIsRoom() async throws {
        try await Self.withImageService { service, rules, client in
            let bytes = Self.movie(3 << 20, seed: 3), key = Self.key()
            var begin = BeginUploadRequest()
            begin.key = key
            begin.totalSize = Int64(bytes.count)
            begin.contentType = "video/mp4"
            let upload = try await client.call(ImageServiceRPC.beginUpload, begin, options: Self.once)
            func append(_ offset: Int) async throws -> AppendUploadResponse {
                var request = AppendUploadRequest()
                request.uploadId = upload.uploadId
                request.offset = Int64(offset)
                request.data = Array(bytes[offset..<min(bytes.count, offset + (1 << 20))])
                return try await client.call(ImageServiceRPC.appendUpload, request, options: Self.once)
            }
            #expect(try await append(0).receivedBytes == 1 << 20)
            try rules.set(["write /images/uploads/ ENOSPC"])
            let (code, message) = await Self.outcome { _ = try await append(1 << 20) }
            #expect(code == .resourceExhausted, "\(String(describing: code)) \(message)")
            #expect(message.contains("disk is full"), "\(message)")
            try rules.set([])
            // The upload goes on where it stood.
            #expect(try await append(1 << 20).receivedBytes == 2 << 20)
            #expect(try await append(2 << 20).receivedBytes == 3 << 20)
            var commit = CommitUploadRequest()
            commit.uploadId = upload.uploadId
            #expect(try await client.call(ImageServiceRPC.commitUpload, commit, options: Self.once).checksum == SHA256.checksum(bytes))
            #expect(try await Self.get(client, key) == bytes)
        }
    }

    /// A blob the disk cannot read is not a write that failed: the answer says the read failed
    /// and nothing changed (it said "nothing was stored"), and the image is whole once the disk
    /// reads again, on the same process.
    @Test func anUnreadableBlobIsUnavailableSayingNothingChangedAndReadsWholeOnceTheDiskReadsAgain() async throws {
        try await Self.withImageService { service, rules, client in
            let key = Self.key(), bytes = Self.movie(300_000, seed: 4)
            _ = try await Self.put(client, bytes, key: key)
            // Out of the cache, so the next read goes to the disk.
            var purge = PurgeCacheRequest()
            purge.level = .critical
            _ = try await client.call(ImageServiceRPC.purgeCache, purge, options: patient)

            try rules.set(["read /images/blobs/ EIO"])
            var request = GetImageRequest()
            request.key = key
            let (code, message) = await Self.outcome { _ = try await client.call(ImageServiceRPC.getImage, request, options: Self.once) }
            #expect(service.log.contains("faultshim: read"), "the fault did not happen:\n\(service.log)")
            #expect(code == .unavailable, "\(String(describing: code)) \(message)")
            #expect(message.contains("failed reading") && message.contains("nothing was changed"), "\(message)")
            #expect(!message.contains("nothing was stored"), "\(message)")

            try rules.set([])
            #expect(try await Self.get(client, key) == bytes)
            #expect(service.process.isRunning)
        }
    }

    @Test func aFailedFsyncOfTheImageIndexStopsTheServiceAndTheRestartHasEveryAcknowledgedImageWhole() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rules = FaultShim.Rules(in: folder)
        try rules.set([])
        let service = try Service("image-service", folder: folder, rules: rules)
        defer { service.stop() }
        var acknowledged: [String: [UInt8]] = [:]
        let client = try service.client()
        _ = try await client.call(HealthRPC.check, HealthCheckRequest(), options: patient)
        for seed in UInt8(1)...3 {
            let key = Self.key(), bytes = Self.movie(100_000 + Int(seed) * 1000, seed: seed)
            _ = try await Self.put(client, bytes, key: key)
            acknowledged[key] = bytes
        }
        try rules.set(["sync images.db-wal EIO"])
        let doomed = Self.key(), doomedBytes = Self.movie(150_000, seed: 9)
        let (code, message) = await Self.outcome { _ = try await Self.put(client, doomedBytes, key: doomed) }
        client.close()
        // Not "failed, nothing stored" (which let the old code delete the blob of a row the log
        // may hold): UNAVAILABLE, saying the outcome is unknown.
        #expect(code == .unavailable, "\(String(describing: code)) \(message)")
        #expect(message.contains("may or may not have been stored"), "\(message)")
        #expect(await ExecutableTests.waitForExit(service.process, seconds: 30), "it goes on running after the fault")
        #expect(service.process.terminationStatus == 1)
        #expect(service.log.contains("storage fault"), "\(service.log)")

        try service.restartHealthy()
        let again = try service.client()
        defer { again.close() }
        for (key, bytes) in acknowledged {
            #expect(try await Self.get(again, key) == bytes, "acknowledged image \(key)")
        }
        // The write whose fate was unknown: whole or absent, never a row without its bytes.
        var read: [UInt8]?
        let (fate, fateMessage) = await Self.outcome { read = try await Self.get(again, doomed) }
        #expect(read == nil || read == doomedBytes)
        #expect(fate == nil || fate == .notFound, "\(String(describing: fate)) \(fateMessage)")
    }

    @Test func aFailedFsyncOfTheItemDatabaseStopsTheServiceAndTheRestartHasEveryAcknowledgedItem() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rules = FaultShim.Rules(in: folder)
        try rules.set([])
        let service = try Service("item-service", folder: folder, rules: rules)
        defer { service.stop() }
        let client = try service.client()
        _ = try await client.call(HealthRPC.check, HealthCheckRequest(), options: patient)
        var acknowledged: [String: String] = [:]
        for name in ["Lamp", "Chair", "Desk"] {
            var request = CreateItemRequest()
            request.name = name
            acknowledged[try await client.call(ItemServiceRPC.createItem, request, options: Self.once).key] = name
        }
        try rules.set(["sync items.db-wal EIO"])
        var doomed = CreateItemRequest()
        doomed.name = "Doomed"
        let (code, message) = await Self.outcome { _ = try await client.call(ItemServiceRPC.createItem, doomed, options: Self.once) }
        client.close()
        #expect(code == .unavailable, "\(String(describing: code)) \(message)")
        #expect(await ExecutableTests.waitForExit(service.process, seconds: 30), "it goes on running after the fault")
        #expect(service.process.terminationStatus == 1)

        try service.restartHealthy()
        let again = try service.client()
        defer { again.close() }
        let listed = try await again.call(ItemServiceRPC.listItems, ListItemsRequest(), options: patient).items
        let names = Dictionary(uniqueKeysWithValues: listed.map { ($0.key, $0.name) })
        for (key, name) in acknowledged { #expect(names[key] == name, "acknowledged item \(name)") }
        #expect(Set(names.values).isSubset(of: ["Lamp", "Chair", "Desk", "Doomed"]))
    }
}
