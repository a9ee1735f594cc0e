import CurveAuth
import Foundation
import Runtime
import Testing
import ZMQ

/// CURVE servers and clients over real TCP on 127.0.0.1, with the ZAP handler answering from
/// an allowed-keys file.
@Suite struct CurveHandshakeTests {
    @Test func allowedClientsMessagesArriveWithItsPublicKeyAsUserID() async throws {
        let folder = try TemporaryFolder()
        let result = try await onOwnThread { () -> (payload: String, userID: String?, role: Role?, expected: String, reply: String) in
            let (logger, _) = collectingLogger()
            let serverKeys = try CurveKeyPair.generate()
            let clientKeys = try CurveKeyPair.generate()
            let table = try keyTable(in: folder, [AllowedKey(role: .worker, publicKey: clientKeys.publicKey, name: "good")], logger: logger)
            let context = try Context()
            let zap = ZAPAuthenticator(context: context, keys: table, logger: logger)
            try zap.start()
            defer { zap.stop() }
            let (router, endpoint) = try curveServer(context, keys: serverKeys)
            let dealer = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: clientKeys)
            try dealer.send([Array("hello".utf8)])
            guard let (frames, userID) = try router.receiveFramesWithUserID() else { throw Failure("nothing arrived") }
            // The connection is encrypted both ways: the reply reaches the client too.
            try router.send([frames[0].bytes, Array("welcome".utf8)])
            let reply = try dealer.receive() ?? []
            return (String(decoding: frames[1].bytes, as: UTF8.self), userID, userID.flatMap(table.role(ofUserID:)),
                    clientKeys.publicKey, String(decoding: reply.first ?? [], as: UTF8.self))
        }
        #expect(result.payload == "hello")
        #expect(result.userID == result.expected)
        #expect(result.role == .worker)
        #expect(result.reply == "welcome")
    }

    @Test func clientsWithoutKeysWithAWrongServerKeyOrAnUnlistedKeyGetNothingThrough() async throws {
        let folder = try TemporaryFolder()
        struct Seen: Sendable {
            var noKeys: MonitorEvent
            var wrongServerKey: MonitorEvent
            var unlisted: MonitorEvent
            var leaked: [String]
            var good: String?
            var goodUserID: String?
            var expectedUserID: String
            var refused: Int
        }
        let seen = try await onOwnThread { () -> Seen in
            let (logger, _) = collectingLogger()
            let serverKeys = try CurveKeyPair.generate()
            let goodKeys = try CurveKeyPair.generate()
            let table = try keyTable(in: folder, [AllowedKey(role: .reader, publicKey: goodKeys.publicKey)], logger: logger)
            let context = try Context()
            let zap = ZAPAuthenticator(context: context, keys: table, logger: logger)
            try zap.start()
            defer { zap.stop() }
            let (router, endpoint) = try curveServer(context, keys: serverKeys)
            let monitor = try handshakeMonitor(context, of: router)
            let failed: MonitorEvents = [.handshakeFailedAuth, .handshakeFailedProtocol, .handshakeFailedNoDetail]

            // Each bad client sends, its handshake fails on the server, and it is closed.
            let noKeys = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: nil)
            try noKeys.send([Array("no keys".utf8)])
            let noKeysEvent = try nextEvent(failed, on: monitor)
            noKeys.close()

            let impostor = try CurveKeyPair.generate()
            let wrongServer = try client(context, endpoint, serverKey: impostor.publicKey, keys: goodKeys)
            try wrongServer.send([Array("wrong server key".utf8)])
            let wrongServerEvent = try nextEvent([.handshakeFailedProtocol], on: monitor)
            wrongServer.close()

            let unlisted = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: try CurveKeyPair.generate())
            try unlisted.send([Array("unlisted".utf8)])
            let unlistedEvent = try nextEvent([.handshakeFailedAuth], on: monitor)
            unlisted.close()

            // The server still serves the allowed key afterwards, and only it.
            let good = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: goodKeys)
            try good.send([Array("good".utf8)])
            var leaked: [String] = []
            var goodMessage: (payload: String, userID: String?)?
            while let message = try receivePayload(router) {
                if message.payload == "good" { goodMessage = message; break }
                leaked.append(message.payload)
            }
            try router.setReceiveTimeout(300)
            while let message = try receivePayload(router) { leaked.append(message.payload) }
            return Seen(noKeys: noKeysEvent, wrongServerKey: wrongServerEvent, unlisted: unlistedEvent, leaked: leaked,
                        good: goodMessage?.payload, goodUserID: goodMessage?.userID ?? nil, expectedUserID: goodKeys.publicKey,
                        refused: zap.answered.refused)
        }
        // A NULL client against a CURVE server: the mechanisms do not match.
        #expect(seen.noKeys.event == .handshakeFailedProtocol)
        #expect(seen.noKeys.value == 0x1100_0002)  // ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
        // A HELLO sealed for another server's key cannot be opened.
        #expect(seen.wrongServerKey.value == 0x1100_0001)  // ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
        // A sound handshake with an unlisted key: the ZAP handler's 400.
        #expect(seen.unlisted.value == 400)
        #expect(seen.leaked.isEmpty)
        #expect(seen.good == "good")
        #expect(seen.goodUserID == seen.expectedUserID)
        #expect(seen.refused >= 1)
    }

    @Test func curveServerEnforcingTheZAPDomainLetsNoClientInWithoutAHandler() async throws {
        let seen = try await onOwnThread { () -> (event: MonitorEvent, message: String?, enforced: Bool) in
            let serverKeys = try CurveKeyPair.generate()
            // No ZAPAuthenticator in this context: nothing is bound at inproc://zeromq.zap.01.
            let context = try Context()
            let (router, endpoint) = try curveServer(context, keys: serverKeys, enforce: true)
            let monitor = try handshakeMonitor(context, of: router)
            let dealer = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: try CurveKeyPair.generate())
            try dealer.send([Array("let me in".utf8)])
            let event = try nextEvent([.handshakeSucceeded, .handshakeFailedAuth, .handshakeFailedProtocol, .handshakeFailedNoDetail], on: monitor)
            try router.setReceiveTimeout(500)
            return (event, try receivePayload(router)?.payload, try router.zapEnforceDomain)
        }
        #expect(seen.enforced)
        #expect(seen.event.event == .handshakeFailedNoDetail)
        #expect(seen.message == nil)
    }

    /// Documents libzmq 4.3.4: a CURVE server with a ZAP domain but without ZAP_ENFORCE_DOMAIN
    /// lets any CURVE client that knows its public key in when no ZAP handler is running (the
    /// "Stonehouse" legacy), unauthenticated: no User-Id. Servers must set enforce.
    @Test func withoutEnforceDomainLibzmqLetsAnyCurveClientInWhenNoHandlerRuns() async throws {
        let seen = try await onOwnThread { () -> (message: String?, userID: String?) in
            let serverKeys = try CurveKeyPair.generate()
            let context = try Context()
            let (router, endpoint) = try curveServer(context, keys: serverKeys, enforce: false)
            let dealer = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: try CurveKeyPair.generate())
            try dealer.send([Array("let me in".utf8)])
            let message = try receivePayload(router)
            return (message?.payload, message?.userID ?? nil)
        }
        #expect(seen.message == "let me in")
        #expect(seen.userID == nil)
    }

    @Test func revokingAKeyInTheFileChangesTheTableWithoutARestartAndRefusesItsNewConnections() async throws {
        let folder = try TemporaryFolder()
        struct Seen: Sendable {
            var before: Role?
            var after: Role?
            var firstUserID: String?
            var oldConnectionUserID: String?
            var newConnection: MonitorEvent
            var leaked: String?
            var otherStillServed: String?
            var key: String
            var reloads: Int
        }
        let seen = try await onOwnThread { () -> Seen in
            let (logger, _) = collectingLogger()
            let serverKeys = try CurveKeyPair.generate()
            let revoked = try CurveKeyPair.generate()
            let kept = try CurveKeyPair.generate()
            let table = try keyTable(in: folder, [
                AllowedKey(role: .admin, publicKey: revoked.publicKey, name: "laptop"),
                AllowedKey(role: .worker, publicKey: kept.publicKey, name: "worker-1"),
            ], logger: logger)
            let watcher = table.watcher(intervalMilliseconds: 50)
            try watcher.start()
            defer { watcher.stop() }
            let context = try Context()
            let zap = ZAPAuthenticator(context: context, keys: table, logger: logger)
            try zap.start()
            defer { zap.stop() }
            let (router, endpoint) = try curveServer(context, keys: serverKeys)
            let monitor = try handshakeMonitor(context, of: router)

            let first = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: revoked)
            try first.send([Array("first".utf8)])
            let firstMessage = try receivePayload(router)
            let before = table.role(ofUserID: revoked.publicKey)

            try AllowedKeys.edit(file: table.file) { keys in _ = keys.revoke("laptop") }
            guard waitUntil({ table.role(ofUserID: revoked.publicKey) == nil }) else { throw Failure("the watcher never reloaded") }
            let after = table.role(ofUserID: revoked.publicKey)

            // libzmq authenticates a connection once: the open one still delivers, with its
            // User-Id, which the table no longer allows (the server checks the role per message).
            try first.send([Array("still open".utf8)])
            let oldConnection = try receivePayload(router)

            // A new connection with the revoked key is refused by the ZAP handler.
            _ = try? monitor.setReceiveTimeout(3000)
            let second = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: revoked)
            try second.send([Array("again".utf8)])
            let refused = try nextEvent([.handshakeFailedAuth], on: monitor)
            try router.setReceiveTimeout(300)
            let leaked = try receivePayload(router)?.payload

            let other = try client(context, endpoint, serverKey: serverKeys.publicKey, keys: kept)
            try other.send([Array("worker".utf8)])
            try router.setReceiveTimeout(3000)
            let otherMessage = try receivePayload(router)
            return Seen(before: before, after: after, firstUserID: firstMessage?.userID ?? nil,
                        oldConnectionUserID: oldConnection?.userID ?? nil, newConnection: refused, leaked: leaked,
                        otherStillServed: otherMessage?.payload, key: revoked.publicKey, reloads: table.generation)
        }
        #expect(seen.firstUserID == seen.key)
        #expect(seen.before == .admin)
        #expect(seen.after == nil)
        #expect(seen.reloads >= 2)
        #expect(seen.oldConnectionUserID == seen.key)
        #expect(seen.newConnection.value == 400)
        #expect(seen.leaked == nil)
        #expect(seen.otherStillServed == "worker")
    }

    @Test func authenticatorStopsCleanlyAndASecondOneInTheSameContextIsRefused() async throws {
        let folder = try TemporaryFolder()
        let seen = try await onOwnThread { () -> (secondError: ZMQError?, restarted: Bool) in
            let (logger, _) = collectingLogger()
            let table = try keyTable(in: folder, [], logger: logger)
            let context = try Context()
            let zap = ZAPAuthenticator(context: context, keys: table, logger: logger)
            try zap.start()
            var secondError: ZMQError?
            let second = ZAPAuthenticator(context: context, keys: table, logger: logger)
            do { try second.start() } catch { secondError = error as? ZMQError }
            zap.stop()
            zap.stop()
            // The endpoint is free again once stopped.
            let again = ZAPAuthenticator(context: context, keys: table, logger: logger)
            try again.start()
            again.stop()
            return (secondError, true)
        }
        #expect(seen.secondError?.code == EADDRINUSE)
        #expect(seen.restarted)
    }
}
