import Proto
import Testing
import ZMQ
@testable import RPC

@Suite struct MessageBodyTests {
    @Test func smallBodiesAreBytesLargeOnesFramesAndBothHoldTheEncoding() {
        var small = PutImageRequest()
        small.ownerKey = "o"
        small.data = [1, 2, 3]
        var large = small
        large.data = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let smallBody = MessageBody(encoding: small), largeBody = MessageBody(encoding: large)
        guard case .bytes = smallBody.storage else {
            Issue.record("a \(smallBody.count)-byte body should be bytes")
            return
        }
        guard case .frame = largeBody.storage else {
            Issue.record("a \(largeBody.count)-byte body should be a frame")
            return
        }
        #expect(smallBody.bytes == small.serializedBytes())
        #expect(largeBody.count == large.serializedBytes().count && largeBody.bytes == large.serializedBytes())
        #expect(MessageBody(encoding: PutImageRequest()).count == 0)
        #expect(MessageBody(bytes: [9]) == MessageBody(bytes: [9]) && MessageBody(bytes: [9]) != .empty)
    }

    @Test func aFrameBodyCanBeSentTwice() throws {
        // A retry resends the same body: sending must not consume the frame.
        let context = try Context()
        let endpoint = "inproc://message-body-\(UInt64.random(in: 0...UInt64.max))"
        let pull = try Socket(context, .pull)
        try pull.setReceiveTimeout(2000)
        try pull.bind(endpoint)
        let push = try Socket(context, .push)
        try push.connect(endpoint)
        var request = PutImageRequest()
        request.data = [UInt8](repeating: 5, count: 100_000)
        let message = OutgoingMessage(head: [[], [1]], body: MessageBody(encoding: request))
        #expect(try push.send(message))
        #expect(try push.send(message))
        for _ in 0..<2 {
            let frames = try #require(try pull.receiveFrames())
            #expect(frames.map(\.count) == [0, 1, request.serializedBytes().count])
            #expect(frames[2].bytes == request.serializedBytes())
        }
        push.close()
        pull.close()
    }
}
