import CurveAuth
import Foundation
import Proto
import RPC
import Runtime
import Testing
import RPCTestSupport
import TestSupport
import ZMQ

/// Events over CURVE: only allowed keys hear them, and a key revoked while subscribed hears no more.
extension CurveRPCTests {
    /// Receives what `socket` has queued now, as topics.
    static func topics(_ socket: Socket) throws -> [String] {
        var topics: [String] = []
        while let frames = try socket.receive(dontWait: true) { topics.append(String(decoding: frames[0], as: UTF8.self)) }
        return topics
    }

    /// Publishes `count` numbered events ("item.<prefix>.<n>") and waits until `socket` heard
    /// them all; what it heard.
    static func publishAll(_ prefix: String, count: Int, on suite: SecuredServer, heardBy socket: Socket) async throws -> Set<String> {
        let expected = Set((0..<count).map { "item.\(prefix).\($0)" })
        for topic in expected.sorted() { suite.server.publish(topic: topic, ItemEvent()) }
        var heard = Set<String>()
        _ = try await eventually { heard.formUnion((try? topics(socket)) ?? []); return expected.isSubset(of: heard) }
        return heard
    }

    @Test func eventsReachOnlyAllowedKeys() async throws {
        let suite = try SecuredServer(eventEndpoints: ["tcp://127.0.0.1:*"])
        let (allowedContext, allowed) = try suite.subscriber(suite.reader)
        let (strangerContext, stranger) = try suite.subscriber(try CurveKeyPair.generate())
        defer {
            allowed.close()
            stranger.close()
            _ = (allowedContext, strangerContext)
        }
        #expect(try await suite.publishUntilHeard("item.created", by: allowed))
        // Once the allowed subscriber heard every one of them, the stranger would have too.
        let heard = try await Self.publishAll("numbered", count: 20, on: suite, heardBy: allowed)
        #expect(heard.filter { $0.hasPrefix("item.numbered.") }.count == 20)
        #expect(try Self.topics(stranger).isEmpty)
    }

    @Test func aKeyRevokedWhileSubscribedHearsNoMoreEventsAndTheOthersGoOnHearing() async throws {
        let suite = try SecuredServer(eventEndpoints: ["tcp://127.0.0.1:*"])
        let (readerContext, reader) = try suite.subscriber(suite.reader)
        let (adminContext, admin) = try suite.subscriber(suite.admin)
        defer {
            reader.close()
            admin.close()
            _ = (readerContext, adminContext)
        }
        #expect(try await suite.publishUntilHeard("item.before", by: reader))
        #expect(try await suite.publishUntilHeard("item.before", by: admin))
        _ = try Self.topics(reader)

        try suite.rewriteAllowed { _ = $0.revoke("dashboard") }
        #expect(suite.keys.reloadIfChanged())
        // The admin's subscription comes back by itself (it reconnects and authenticates again);
        // once it has heard all of the events published after that, the reader would have too.
        #expect(try await suite.publishUntilHeard("item.resubscribed", by: admin))
        let heard = try await Self.publishAll("after", count: 20, on: suite, heardBy: admin)
        #expect(heard.filter { $0.hasPrefix("item.after.") }.count == 20)
        let leaked = try Self.topics(reader).filter { $0.hasPrefix("item.after.") || $0 == "item.resubscribed" }
        #expect(leaked.isEmpty, "the revoked key heard \(leaked)")
        #expect(suite.server.conditions.isEmpty)
    }
}
