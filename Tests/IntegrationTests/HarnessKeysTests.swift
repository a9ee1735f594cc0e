import CurveAuth
import Foundation
import Harness
import Proto
import RPC
import Runtime
import Testing
import TestSupport
import RPCTestSupport
import ZMQ

/// The suite in one process with CURVE keys and a scrape endpoint: the harness runs the same
/// process services as an executable (`ProcessServices`: the ZAP handler and the keys' watcher
/// before the parts, the scrape endpoint after them), so what tests and `homepwner up` run is
/// what the executables run.
@Suite struct HarnessKeysTests {
    @Test func withKeysTheHarnessRunsTheZAPHandlerTheKeysAndTheScrapeEndpointAsAnExecutableDoes() async throws {
        let folder = NSTemporaryDirectory() + "harness-keys-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let serverKeys = try CurveKeyPair.generate()
        let reader = try CurveKeyPair.generate()
        let allowedFile = folder + "/allowed_keys"
        try AllowedKeys.edit(file: allowedFile, create: true) { keys in
            try keys.allow(AllowedKey(role: .reader, publicKey: reader.publicKey, name: "dashboard"))
        }
        let logger = Logger(label: "harness-keys", level: .warning)
        // Loaded from the options as every executable loads them (the servers' own key is admin).
        let (_, serverSecret) = try serverKeys.save(directory: folder, name: "server")
        let options = try OptionParser(command: "test", summary: "", options: TransportSecurity.options)
            .parse(["--server-secret-key", serverSecret, "--allowed-keys", allowedFile], environment: [:])
        let security = try #require(try TransportSecurity.load(options, logger: logger))
        let token = BearerToken.generate()
        let harness = try Harness(
            logger: logger, security: security, metrics: .init(endpoint: "tcp://127.0.0.1:0", token: token))
        defer { harness.shutdown() }
        try harness.start()

        // The parts serve CURVE and call each other with the server key (admin): every part's
        // health answers the harness's own clients, and an item is created.
        for part in Harness.Part.allCases {
            let client = try harness.client(part)
            defer { client.close() }
            #expect(try await client.call(HealthRPC.check, HealthCheckRequest(), options: patient).process == part.rawValue)
        }
        let admin = try harness.client(.itemService)
        defer { admin.close() }
        var create = CreateItemRequest()
        create.name = "Lamp"
        let item = try await admin.call(ItemServiceRPC.createItem, create, options: patient)

        // A reader's key reads and may not write; a key the file does not list gets no answer.
        func client(_ keys: CurveKeyPair) throws -> (Context, RPCClient) {
            let context = try Context(ioThreads: 1)
            TransportSecurity(client: .init(keyPair: keys, serverKey: serverKeys.publicKey)).install(on: context)
            return (context, try RPCClient(context: context, endpoint: harness.endpoints.itemRPC, configuration: .init(connectWaitMilliseconds: 700)))
        }
        let (readerContext, readerClient) = try client(reader)
        defer { readerClient.close(); _ = readerContext }
        var get = GetItemRequest()
        get.key = item.key
        #expect(try await readerClient.call(ItemServiceRPC.getItem, get, options: patient).name == "Lamp")
        var delete = DeleteItemRequest()
        delete.key = item.key
        let refused = await rpcError { try await readerClient.call(ItemServiceRPC.deleteItem, delete, options: .init(retry: .none)) }
        #expect(refused?.code == .permissionDenied, "\(String(describing: refused))")
        let (strangerContext, stranger) = try client(try CurveKeyPair.generate())
        defer { stranger.close(); _ = strangerContext }
        let unanswered = await rpcError { try await stranger.call(ItemServiceRPC.getItem, get, options: .init(retry: .none)) }
        #expect(unanswered?.code == .unavailable, "\(String(describing: unanswered))")

        // The scrape endpoint: the token is required, and every part's figures are served.
        let bound = try #require(harness.scrapeEndpoint?.boundEndpoint)
        let port = try #require(UInt16(bound.split(separator: ":").last ?? ""))
        let anonymous = try await onThread { try HTTPResponse(TestHTTPClient.exchange(port: port, "GET /metrics HTTP/1.1\r\n\r\n")) }
        #expect(anonymous.status == 401)
        let scraped = try await onThread {
            try HTTPResponse(TestHTTPClient.exchange(
                port: port, "GET /metrics HTTP/1.1\r\nAuthorization: Bearer \(String(decoding: token.bytes, as: UTF8.self))\r\n\r\n"))
        }
        #expect(scraped.status == 200)
        let text = String(decoding: scraped.body, as: UTF8.self)
        for part in Harness.Part.allCases {
            #expect(text.contains("process=\"\(part.rawValue)\""), "\(part.rawValue) in \(text.prefix(300))")
        }
    }
}
