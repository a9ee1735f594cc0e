import Foundation
import Testing
import ZMQ

@Suite struct CurveTests {
    @Test func z85MatchesTheRFC32TestVector() throws {
        let bytes: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        #expect(try Z85.encode(bytes) == "HelloWorld")
        #expect(try Z85.decode("HelloWorld") == bytes)
        #expect(throws: ZMQError.self) { try Z85.encode([1, 2, 3]) }
        #expect(throws: ZMQError.self) { try Z85.decode("Hello Worl") }
        #expect(throws: ZMQError.self) { try Z85.decode("abc") }
    }

    @Test func keyPairsAreZ85AndThePublicKeyDerivesFromTheSecret() throws {
        #expect(ZMQ.hasCurve)
        let (publicKey, secretKey) = try ZMQ.curveKeyPair()
        #expect(Z85.isCurveKey(publicKey) && Z85.isCurveKey(secretKey))
        #expect(try Z85.decode(publicKey).count == 32)
        #expect(try ZMQ.curvePublicKey(secretKey: secretKey) == publicKey)
        #expect(try ZMQ.curveKeyPair().publicKey != publicKey)
    }

    @Test func curveOptionsRefuseAStringThatIsNotAKeyWithoutEchoingIt() throws {
        let context = try Context()
        let socket = try Socket(context, .router)
        do {
            try socket.setCurveServer(secretKey: "not-a-key-but-maybe-a-secret")
            Issue.record("accepted a bad key")
        } catch {
            #expect((error as? ZMQError)?.code == EINVAL)
            #expect(!"\(error)".contains("maybe-a-secret"))
        }
        #expect(try !socket.usesCurve)
        try socket.setCurveServer(secretKey: try ZMQ.curveKeyPair().secretKey)
        #expect(try socket.usesCurve)
        #expect(try !socket.zapEnforceDomain)
        try socket.setZAPEnforceDomain(true)
        #expect(try socket.zapEnforceDomain)
        try socket.setZAPDomain("homepwner")
    }

    @Test func messagesOfUnauthenticatedConnectionsHaveNoUserID() throws {
        let context = try Context()
        let (push, pull) = try pushPull(context)
        try push.send([bytes("a"), bytes("b")])
        let received = try #require(try pull.receiveFramesWithUserID())
        #expect(received.frames.map(\.bytes) == [bytes("a"), bytes("b")])
        #expect(received.userID == nil)
        #expect(try pull.receiveFramesWithUserID(dontWait: true) == nil)
    }
}
