import CurveAuth
import Foundation
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport
import TestSupport
import ZMQ

/// The RPC layer with CURVE keys (docs/protocol.md §9): real sockets over TCP loopback, a real
/// ZAP handler, real key files. Each "process" has its own context, as the ZAP handler and the
/// keys belong to one.
@Suite(.serialized) struct CurveRPCTests {
    /// A serving process with keys: the server key pair, an allowed-keys file listing admin,
    /// worker and reader keys, the ZAP handler running, and a server with the test methods.
    final class SecuredServer: @unchecked Sendable {
        let folder: String
        let allowedFile: String
        let serverKeys: CurveKeyPair
        let admin: CurveKeyPair
        let worker: CurveKeyPair
        let reader: CurveKeyPair
        let context: Context
        let keys: KeyTable
        let zap: ZAPAuthenticator
        let server: RPCServer

        init(
            eventEndpoints: [String] = [], maxInFlight: Int = 1024, maxInFlightPerPeer: Int? = nil, handshakeTimeoutMilliseconds: Int32 = 5000
        ) throws {
            folder = NSTemporaryDirectory() + "curve-rpc-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            serverKeys = try CurveKeyPair.generate()
            let admin = try CurveKeyPair.generate()
            let worker = try CurveKeyPair.generate()
            let reader = try CurveKeyPair.generate()
            (self.admin, self.worker, self.reader) = (admin, worker, reader)
            let allowedFile = folder + "/allowed_keys"
            self.allowedFile = allowedFile
            try AllowedKeys.edit(file: allowedFile, create: true) { keys in
                try keys.allow(AllowedKey(role: .admin, publicKey: admin.publicKey, name: "ops"))
                try keys.allow(AllowedKey(role: .worker, publicKey: worker.publicKey, name: "thumbs-1"))
                try keys.allow(AllowedKey(role: .reader, publicKey: reader.publicKey, name: "dashboard"))
            }
            context = try Context(ioThreads: 1)
            keys = try KeyTable(file: allowedFile, logger: testLogger)
            TransportSecurity(server: .init(keyPair: serverKeys, keys: keys)).install(on: context)
            zap = ZAPAuthenticator(context: context, keys: keys, logger: testLogger)
            try zap.start()
            var configuration = RPCServer.Configuration(
                endpoints: ["tcp://127.0.0.1:*"], processName: "curve-test", maxInFlight: maxInFlight,
                maxInFlightPerPeer: maxInFlightPerPeer, eventEndpoints: eventEndpoints)
            configuration.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
            server = try RPCServer(context: context, configuration: configuration, logger: testLogger)
            registerTestMethods(server, calls: nil)
            try server.start()
        }

        var endpoint: String { server.boundEndpoints[0] }

        /// A client process calling with `keys` (nil: no keys at all) and `serverKey`.
        func client(_ keys: CurveKeyPair?, serverKey: String? = nil, connectWait: Int = 3000) throws -> RPCClient {
            let context = try Context(ioThreads: 1)
            if let keys {
                TransportSecurity(client: .init(keyPair: keys, serverKey: serverKey ?? serverKeys.publicKey)).install(on: context)
            }
            return try RPCClient(context: context, endpoint: endpoint, configuration: .init(connectWaitMilliseconds: connectWait))
        }

        /// `count` raw DEALER connections of one client process calling with `keys`.
        func connections(of keys: CurveKeyPair, count: Int) throws -> (Context, [Socket]) {
            let context = try Context(ioThreads: 1)
            let security = TransportSecurity(client: .init(keyPair: keys, serverKey: serverKeys.publicKey))
            let sockets = try (0..<count).map { _ in
                let socket = try Socket(context, .dealer)
                try security.secureClient(socket)
                try socket.connect(endpoint)
                return socket
            }
            return (context, sockets)
        }

        /// A subscriber process with `keys`, subscribed to "item." on the first event endpoint.
        func subscriber(_ keys: CurveKeyPair) throws -> (Context, Socket) {
            let context = try Context(ioThreads: 1)
            let socket = try Socket(context, .sub)
            try TransportSecurity(client: .init(keyPair: keys, serverKey: serverKeys.publicKey)).secureClient(socket)
            try socket.subscribe(Array("item.".utf8))
            try socket.connect(server.boundEventEndpoints[0])
            return (context, socket)
        }

        /// Publishes `topic` until `socket` receives an event of it (PUB drops until a
        /// subscription arrives); whether it did within 10 s.
        func publishUntilHeard(_ topic: String, by socket: Socket) async throws -> Bool {
            for _ in 0..<1000 {
                server.publish(topic: topic, ItemEvent())
                try await Task.sleep(for: .milliseconds(10))
                while let frames = try socket.receive(dontWait: true) {
                    if String(decoding: frames[0], as: UTF8.self) == topic { return true }
                }
            }
            return false
        }

        func rewriteAllowed(_ body: (inout AllowedKeys) throws -> Void) throws {
            try AllowedKeys.edit(file: allowedFile) { try body(&$0) }
        }

        deinit {
            server.stop()
            zap.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    static let once = CallOptions(timeoutMilliseconds: 2000, retry: .none)

    /// The status code of a call that failed, or nil when it succeeded.
    static func code(_ call: () async throws -> Void) async -> StatusCode? {
        do {
            try await call()
            return nil
        } catch {
            return (error as? RPCError)?.code ?? .unknown
        }
    }

    @Test func clientsWithoutKeysWithAWrongServerKeyOrAnUnlistedKeyGetNoReplyAndOthersAreServed() async throws {
        let suite = try SecuredServer()
        let impostor = try CurveKeyPair.generate()
        let strangers = [
            try suite.client(nil, connectWait: 700),
            try suite.client(suite.admin, serverKey: impostor.publicKey, connectWait: 700),
            try suite.client(impostor, connectWait: 700),
        ]
        for stranger in strangers {
            defer { stranger.close() }
            let code = await Self.code { _ = try await stranger.call(ItemServiceRPC.getItem, getItem("x"), options: Self.once) }
            // Never connected, so the call was never sent: nothing of the server's came back.
            #expect(code == .unavailable)
        }
        #expect(suite.server.stats.received == 0)
        let reader = try suite.client(suite.reader)
        defer { reader.close() }
        let item = try await reader.call(ItemServiceRPC.getItem, getItem("served"), options: Self.once)
        #expect(item.key == "served")
        #expect(suite.zap.answered.refused >= 1)
    }

    @Test func eachRoleIsAllowedAndRefusedAsTheTableSays() async throws {
        let suite = try SecuredServer()
        let admin = try suite.client(suite.admin)
        let worker = try suite.client(suite.worker)
        let reader = try suite.client(suite.reader)
        defer { [admin, worker, reader].forEach { $0.close() } }
        for client in [admin, worker, reader] {
            #expect(try await client.call(ItemServiceRPC.getItem, getItem("k"), options: Self.once).key == "k")
            #expect(try await client.call(HealthRPC.check, HealthCheckRequest(), options: Self.once).status == .serving)
        }
        #expect(try await admin.call(ItemServiceRPC.createItem, createItem("lamp"), options: Self.once).name == "lamp")
        for client in [worker, reader] {
            do {
                _ = try await client.call(ItemServiceRPC.createItem, createItem("lamp"), options: Self.once)
                Issue.record("a non-admin created an item")
            } catch {
                let failure: RPCError? = error
                #expect(failure?.code == .permissionDenied)
                #expect(failure?.message.contains("/homepwner.v1.ItemService/CreateItem needs admin") == true, "\(failure?.message ?? "")")
            }
        }
        #expect(suite.server.stats.permissionDenied == 2)

        // The table itself, from each method's `allow` options in the .proto.
        func may(_ role: Role, _ method: any AnyProtoMethod) -> Bool { role.mayCall(MethodRoles.callers(of: method.path)) }
        let jobs: [any AnyProtoMethod] = [JobQueueRPC.lease, JobQueueRPC.extend, JobQueueRPC.complete, JobQueueRPC.fail]
        let captureStores: [any AnyProtoMethod] = [
            ImageServiceRPC.putImage, ImageServiceRPC.beginUpload, ImageServiceRPC.appendUpload, ImageServiceRPC.commitUpload,
            ImageServiceRPC.abortUpload, ImageServiceRPC.deleteImage, ItemServiceRPC.attachPhoto, ItemServiceRPC.detachPhoto,
        ]
        let readers: [any AnyProtoMethod] = [
            ItemServiceRPC.getItem, ItemServiceRPC.listItems, ImageServiceRPC.getRendition, ImageServiceRPC.getImage,
            HealthRPC.check, MetricsRPC.stats, JobQueueRPC.listJobs,
        ]
        let adminOnly: [any AnyProtoMethod] = [
            ItemServiceRPC.createItem, ItemServiceRPC.deleteItem, ImageServiceRPC.deleteImagesForOwner, JobQueueRPC.purgeJobs,
            JobQueueRPC.retryDead, ImageServiceRPC.purgeCache, JobQueueRPC.pauseQueue, CaptureServiceRPC.saveToAlbum,
            ImageServiceRPC.enqueueThumbnails, ItemServiceRPC.updateItem,
        ]
        for method in readers { for role in Role.allCases { #expect(may(role, method), "\(role) \(method.path)") } }
        for method in jobs {
            #expect(may(.captureWorker, method) && may(.thumbnailWorker, method) && may(.worker, method), "\(method.path)")
            #expect(!may(.reader, method), "\(method.path)")
        }
        for method in captureStores {
            #expect(may(.captureWorker, method) && may(.worker, method), "\(method.path)")
            // A thumbnail worker stores nothing itself: its results are stored with the job it completes.
            #expect(!may(.thumbnailWorker, method) && !may(.reader, method), "\(method.path)")
        }
        for method in adminOnly {
            #expect(MethodRoles.callers(of: method.path).isEmpty, "\(method.path)")
            for role in Role.allCases { #expect(may(role, method) == (role == .admin), "\(role) \(method.path)") }
        }
        // A method the protocol does not know needs admin.
        #expect(MethodRoles.callers(of: "/homepwner.v1.ItemService/SomethingNew").isEmpty)
        // Each worker kind works its own queue only.
        #expect(Role.captureWorker.works(queue: "capture") && !Role.captureWorker.works(queue: "thumbnails"))
        #expect(Role.thumbnailWorker.works(queue: "thumbnails") && !Role.thumbnailWorker.works(queue: "capture"))
        #expect(!Role.worker.works(queue: "cascade") && !Role.reader.works(queue: "thumbnails"))
    }

    @Test func aKeyRevokedWhileConnectedIsRefusedOnItsNextCallAndAKeyAddedToTheFileGetsInWithoutARestart() async throws {
        let suite = try SecuredServer()
        let reader = try suite.client(suite.reader)
        defer { reader.close() }
        #expect(try await reader.call(ItemServiceRPC.getItem, getItem("before"), options: Self.once).key == "before")

        try suite.rewriteAllowed { _ = $0.revoke("dashboard") }
        #expect(suite.keys.reloadIfChanged())
        // The same open connection: its next call gets no reply at all.
        let code = await Self.code {
            _ = try await reader.call(ItemServiceRPC.getItem, getItem("after"), options: .init(timeoutMilliseconds: 800, retry: .none))
        }
        #expect(code == .deadlineExceeded)
        #expect(suite.server.stats.unauthenticated >= 1)

        // Rotation: a new key is added to the file, and connects at once; the admin never stopped.
        let rotated = try CurveKeyPair.generate()
        try suite.rewriteAllowed { try $0.allow(AllowedKey(role: .reader, publicKey: rotated.publicKey, name: "dashboard-2")) }
        #expect(suite.keys.reload())
        let fresh = try suite.client(rotated)
        defer { fresh.close() }
        #expect(try await fresh.call(ItemServiceRPC.getItem, getItem("rotated"), options: Self.once).key == "rotated")
        let admin = try suite.client(suite.admin)
        defer { admin.close() }
        #expect(try await admin.call(ItemServiceRPC.getItem, getItem("admin"), options: Self.once).key == "admin")
    }

    @Test func theWatcherPicksUpAnEditedFileOnItsOwn() async throws {
        let suite = try SecuredServer()
        let watcher = suite.keys.watcher(intervalMilliseconds: 50)
        try watcher.start()
        defer { watcher.stop() }
        let newcomer = try CurveKeyPair.generate()
        let before = suite.keys.generation
        try suite.rewriteAllowed { try $0.allow(AllowedKey(role: .reader, publicKey: newcomer.publicKey, name: "newcomer")) }
        #expect(try await eventually { suite.keys.generation > before })
        let client = try suite.client(newcomer)
        defer { client.close() }
        #expect(try await client.call(ItemServiceRPC.getItem, getItem("n"), options: Self.once).key == "n")
    }
}
