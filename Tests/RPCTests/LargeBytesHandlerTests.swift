import Foundation
import Proto
import RPC
import Runtime
import Testing

/// A handler that takes a request's large bytes field where it lies in the received frame.
@Suite struct LargeBytesHandlerTests {
    @Test func largeFieldsArriveAsFrameBytesAndSmallOnesInTheRequest() async throws {
        let server = try RPCServer(
            context: testContext, configuration: .init(endpoints: [uniqueEndpoint()], processName: "large"),
            logger: testLogger)
        // Echoes what it got: the field as decoded, and the bytes handed over in place.
        server.register(ImageServiceRPC.putImage, largeBytesField: 2) { request, data, _ in
            var info = ImageInfo()
            info.ownerKey = request.ownerKey
            info.contentType = data == nil ? "in request" : "in frame"
            info.sizeBytes = Int64(data?.count ?? request.data.count)
            info.checksum = String(request.data.count)
            if let data { info.key = String(data.bytes.reduce(0) { $0 &+ Int($1) }) }
            return info
        }
        try server.start()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }

        var request = PutImageRequest()
        request.ownerKey = "owner"
        request.contentType = "image/jpeg"
        request.data = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let large = try await client.call(ImageServiceRPC.putImage, request)
        #expect(large.contentType == "in frame" && large.sizeBytes == 300_000 && large.checksum == "0")
        #expect(large.key == String(request.data.reduce(0) { $0 &+ Int($1) }) && large.ownerKey == "owner")

        request.data = [1, 2, 3]
        let small = try await client.call(ImageServiceRPC.putImage, request)
        #expect(small.contentType == "in request" && small.sizeBytes == 3 && small.checksum == "3")
    }

    @Test func decodeLeavesTheFieldAndSaysWhereItIs() throws {
        var request = PutImageRequest()
        request.key = "k"
        request.data = (0..<100_000).map { UInt8(truncatingIfNeeded: $0) }
        let wire = request.serializedBytes()
        let (message, range) = try wire.withUnsafeBytes { buffer throws(ProtoDecodingError) in
            try PutImageRequest.decode(buffer, options: .default, leavingLargeBytesField: 2)
        }
        #expect(message.key == "k" && message.data.isEmpty)
        let found = try #require(range)
        #expect(Array(wire[found]) == request.data)
        // Another field number: everything decoded, nothing left.
        let (whole, none) = try wire.withUnsafeBytes { buffer throws(ProtoDecodingError) in
            try PutImageRequest.decode(buffer, options: .default, leavingLargeBytesField: 3)
        }
        #expect(whole == request && none == nil)
    }
}
