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

    @Test func aClientTakesALargeReplyFieldWhereTheReplyFrameHoldsIt() async throws {
        let server = try RPCServer(
            context: testContext, configuration: .init(endpoints: [uniqueEndpoint()], processName: "large"),
            logger: testLogger)
        // Answers `length` bytes (a pattern from `offset`) and the key it was asked for.
        server.register(ImageServiceRPC.getImage) { request, _ in
            var response = GetImageResponse()
            var info = ImageInfo()
            info.key = request.key
            response.info = info
            response.data = (0..<Int(request.length)).map { UInt8(truncatingIfNeeded: (Int(request.offset) + $0) &* 13) }
            return response
        }
        try server.start()
        defer { server.stop() }
        let client = try RPCClient(context: testContext, endpoint: server.boundEndpoints[0])
        defer { client.close() }

        var request = GetImageRequest()
        request.key = "k"
        request.offset = 5
        request.length = 1 << 20
        let expected = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: (5 + $0) &* 13) }
        let (large, inFrame) = try await client.call(ImageServiceRPC.getImage, request, largeBytesField: GetImageResponse.dataField)
        #expect(large.info?.key == "k" && large.data.isEmpty)
        #expect(inFrame?.bytes == expected)
        #expect(inFrame.map { $0.withUnsafeBytes { Array($0.prefix(3)) } } == Array(expected.prefix(3)))

        request.length = 10
        let (small, none) = try await client.call(ImageServiceRPC.getImage, request, largeBytesField: GetImageResponse.dataField)
        #expect(none == nil && small.data == Array(expected.prefix(10)) && small.info?.key == "k")
        // The plain call decodes the same reply whole.
        request.length = 1 << 20
        #expect(try await client.call(ImageServiceRPC.getImage, request).data == expected)
    }
}
