import Foundation
import Proto
import RPC
import Runtime
import Testing
import ZMQ
import TestSupport

/// Whatever a peer sends, the server answers it precisely or drops it, and keeps serving.
@Suite struct RPCBadInputTests {
    @Test func randomBytesInOneFrameGetInvalidArgumentAndServerKeepsAnswering() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let endpoint = server.boundEndpoints[0]
        let peer = try RawPeer(.dealer, endpoint: endpoint)
        var generator = SplitMix64(seed: 42)
        for _ in 0..<50 {
            let length = Int.random(in: 0...512, using: &generator)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try peer.send([bytes])
            let (header, _) = try #require(try await peer.receiveHeader())
            #expect(header.code == StatusCode.invalidArgument.rawValue)
            #expect(header.message.contains("expected 3 frames"))
        }
        #expect(try await healthy(endpoint))
        #expect(server.stats.malformed == 50)
    }

    @Test(arguments: [1, 2, 10])
    func wrongFrameCountIsInvalidArgumentNamingTheCount(_ count: Int) async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send(Array(repeating: [UInt8](), count: count))
        let (header, frames) = try #require(try await peer.receiveHeader())
        #expect(header.code == StatusCode.invalidArgument.rawValue)
        #expect(header.message.contains("got \(count)"))
        #expect(frames.count == 3 && frames[0].isEmpty && frames[2].isEmpty)
        #expect(try await healthy(server.boundEndpoints[0]))
    }

    @Test func missingEmptyDelimiterIsInvalidArgument() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[1], requestHeader("/homepwner.v1.Health/Check"), []])
        let (header, _) = try #require(try await peer.receiveHeader())
        #expect(header.code == StatusCode.invalidArgument.rawValue)
        #expect(header.message.contains("empty delimiter"))
    }

    @Test func envelopeFramesBeforeTheDelimiterComeBackUnchanged() async throws {
        // What a ROUTER/DEALER proxy or a REQ socket with ZMQ_REQ_CORRELATE puts in front.
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[0xAA, 0x01], [0xBB], [], requestHeader("/homepwner.v1.Health/Check", id: 31), []])
        var reply: [[UInt8]]?
        for _ in 0..<1000 where reply == nil {
            reply = try peer.socket.receive(dontWait: true)
            if reply == nil { try await Task.sleep(for: .milliseconds(2)) }
        }
        let frames = try #require(reply)
        #expect(frames.count == 5)
        #expect(Array(frames.prefix(3)) == [[0xAA, 0x01], [0xBB], []])
        let header = try ResponseHeader(serializedBytes: frames[3])
        #expect(header.requestId == 31 && header.code == 0)
        #expect(try HealthCheckResponse(serializedBytes: frames[4]).status == .serving)
    }

    @Test func headerThatDoesNotParseIsInvalidArgument() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        // Field 1 as a length-delimited string claiming 100 bytes with 2 present.
        try peer.send([[], [0x0A, 100, 0x41, 0x42], []])
        let (header, _) = try #require(try await peer.receiveHeader())
        #expect(header.code == StatusCode.invalidArgument.rawValue)
        #expect(header.message.contains("request header"))
        #expect(header.message.contains("homepwner.v1.RequestHeader"))
    }

    @Test func bodyThatDoesNotParseIsInvalidArgumentWithTheRequestID() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[], requestHeader("/homepwner.v1.ItemService/CreateItem", id: 99), [0xFF, 0xFF, 0xFF]])
        let (header, _) = try #require(try await peer.receiveHeader())
        #expect(header.requestId == 99)
        #expect(header.code == StatusCode.invalidArgument.rawValue)
        #expect(header.message.contains("homepwner.v1.CreateItemRequest"))
    }

    @Test func unknownMethodIsUnimplementedAndEmptyMethodIsInvalid() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[], requestHeader("/homepwner.v1.ItemService/Explode", id: 5), []])
        let (unknown, _) = try #require(try await peer.receiveHeader())
        #expect(unknown.code == StatusCode.unimplemented.rawValue)
        #expect(unknown.requestId == 5)
        try peer.send([[], requestHeader("", id: 6), []])
        let (empty, _) = try #require(try await peer.receiveHeader())
        #expect(empty.code == StatusCode.invalidArgument.rawValue)
    }

    @Test func frameOverTheLimitDisconnectsOnlyItsSender() async throws {
        // MAXMSGSIZE is enforced on tcp and ipc; libzmq does not apply it to inproc.
        let server = try makeServer(endpoint: uniqueEndpoint("ipc"), maxMessageBytes: 64 * 1024)
        defer { server.stop() }
        let endpoint = server.boundEndpoints[0]
        let peer = try RawPeer(.dealer, endpoint: endpoint)
        // Over the 64 KiB body limit plus the 64 KiB header slack.
        try peer.send([[], requestHeader("/homepwner.v1.ItemService/CreateItem"), [UInt8](repeating: 7, count: 256 * 1024)])
        #expect(try await peer.receiveHeader(timeoutMilliseconds: 300) == nil)
        #expect(server.stats.received == 0)  // never allocated into a request
        #expect(try await healthy(endpoint))
    }

    @Test func bodyUnderFrameLimitButOverMessageLimitIsRefusedByDecoder() async throws {
        let server = try makeServer(maxMessageBytes: 64 * 1024)
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        var request = CreateItemRequest()
        request.name = String(repeating: "x", count: 80 * 1024)
        try peer.send([[], requestHeader("/homepwner.v1.ItemService/CreateItem"), request.serializedBytes()])
        let (header, _) = try #require(try await peer.receiveHeader())
        #expect(header.code == StatusCode.invalidArgument.rawValue)
        #expect(header.message.contains("over the limit"))
    }

    @Test func tooManyCallsInFlightGetResourceExhaustedWithRetryAfter() async throws {
        let server = try makeServer(maxInFlight: 1)
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        var slow = GetItemRequest()
        slow.key = "sleep:500"
        try peer.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: 1), slow.serializedBytes()])
        try peer.send([[], requestHeader("/homepwner.v1.ItemService/GetItem", id: 2), slow.serializedBytes()])
        let (busy, _) = try #require(try await peer.receiveHeader())
        #expect(busy.requestId == 2)
        #expect(busy.code == StatusCode.resourceExhausted.rawValue)
        #expect(busy.retryAfterMs > 0)
        let (done, _) = try #require(try await peer.receiveHeader())
        #expect(done.requestId == 1 && done.code == 0)
    }

    @Test func clientRetriesResourceExhaustedAfterRetryAfter() async throws {
        let server = try makeServer(maxInFlight: 1)
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }
        var slow = GetItemRequest()
        slow.key = "sleep:500"
        async let first = client.call(ItemServiceRPC.getItem, slow)
        // The second call is sent once the first is surely running (on a loaded machine a fixed
        // 30 ms pause let the first finish before it, or arrive after it), and retries patiently.
        #expect(try await eventually { server.stats.inFlight == 1 })
        var quick = GetItemRequest()
        quick.key = "quick"
        let second = try await client.call(ItemServiceRPC.getItem, quick, options: .init(retry: RetryPolicy(maxAttempts: 100)))
        #expect(second.key == "quick")
        #expect(try await first.key == "sleep:500")
        #expect(server.stats.rejectedBusy >= 1)
    }
}


/// A request header is decoded on the I/O thread for every call: its metadata is bounded.
@Suite struct RequestHeaderLimitTests {
    static func header(metadataEntries count: Int) -> [UInt8] {
        var header = RequestHeader()
        header.method = "/homepwner.v1.Health/Check"
        header.requestId = 9
        header.metadata = (0..<count).map { index in
            var entry = MetadataEntry()
            entry.key = "k\(index)"
            return entry
        }
        return header.serializedBytes()
    }

    @Test func sixtyFourMetadataEntriesAreServedAndSixtyFiveAreInvalidArgumentNamingTheLimit() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let peer = try RawPeer(.dealer, endpoint: server.boundEndpoints[0])
        try peer.send([[], Self.header(metadataEntries: 64), []])
        let (served, _) = try #require(try await peer.receiveHeader())
        #expect(served.code == StatusCode.ok.rawValue, "\(served.message)")

        // 6,000 entries fit in the header's 64 KiB; they are refused before any is kept.
        for count in [65, 6000] {
            try peer.send([[], Self.header(metadataEntries: count), []])
            let (refused, _) = try #require(try await peer.receiveHeader())
            #expect(refused.code == StatusCode.invalidArgument.rawValue)
            #expect(refused.message.hasPrefix("request header: "), "\(refused.message)")
            #expect(refused.message.contains("has more than 64 values; at most 64 are accepted"), "\(refused.message)")
        }
        #expect(try await healthy(server.boundEndpoints[0]))
    }
}
