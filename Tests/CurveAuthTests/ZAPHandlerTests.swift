import CurveAuth
import Testing
import ZMQ

/// ZAP 1.0 requests as libzmq sends them, answered without sockets.
@Suite struct ZAPHandlerTests {
    static func request(_ mechanism: String, _ credentials: [[UInt8]], version: String = "1.0") -> [[UInt8]] {
        [Array(version.utf8), Array("7".utf8), Array("homepwner".utf8), Array("127.0.0.1".utf8), [], Array(mechanism.utf8)] + credentials
    }

    static func status(_ reply: [[UInt8]]) -> String { String(decoding: reply[2], as: UTF8.self) }

    @Test func curveWithAnAllowedKeyIs200WithTheZ85KeyAsUserID() throws {
        let keys = try CurveKeyPair.generate()
        let raw = try Z85.decode(keys.publicKey)
        let (reply, outcome) = ZAPHandler.reply(to: Self.request("CURVE", [raw])) { $0 == keys.publicKey ? .worker : nil }
        #expect(reply.count == 6)
        #expect(reply[0] == Array("1.0".utf8))
        #expect(reply[1] == Array("7".utf8))
        #expect(Self.status(reply) == "200")
        #expect(reply[4] == Array(keys.publicKey.utf8))
        #expect(outcome == .allowed(publicKey: keys.publicKey, role: .worker))
    }

    @Test func curveWithAnUnknownKeyIs400() throws {
        let raw = try Z85.decode(try CurveKeyPair.generate().publicKey)
        let (reply, outcome) = ZAPHandler.reply(to: Self.request("CURVE", [raw])) { _ in nil }
        #expect(Self.status(reply) == "400")
        #expect(reply[4].isEmpty)
        if case .unknownKey = outcome {} else { Issue.record("\(outcome)") }
    }

    @Test(arguments: ["NULL", "PLAIN", "GSSAPI"])
    func everyOtherMechanismIs400(mechanism: String) {
        let credentials: [[UInt8]] = mechanism == "PLAIN" ? [Array("admin".utf8), Array("secret".utf8)] : []
        let (reply, outcome) = ZAPHandler.reply(to: Self.request(mechanism, credentials)) { _ in .admin }
        #expect(Self.status(reply) == "400")
        #expect(outcome == .mechanismRefused(mechanism))
    }

    @Test func malformedRequestsAreRefused() {
        #expect(Self.status(ZAPHandler.reply(to: Self.request("CURVE", [[1, 2, 3]])) { _ in .admin }.reply) == "400")
        #expect(Self.status(ZAPHandler.reply(to: Self.request("CURVE", [], version: "2.0")) { _ in .admin }.reply) == "400")
        #expect(Self.status(ZAPHandler.reply(to: [Array("1.0".utf8), [9]]) { _ in .admin }.reply) == "500")
    }
}
