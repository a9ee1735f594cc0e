import Foundation
import Proto
import Testing

/// The generated value types through protobuf-c and back.
struct TypedRoundTripTests {
    @Test func emptyMessageEncodesToZeroBytesAndDecodesFromZeroBytes() throws {
        #expect(CreateItemRequest().serializedBytes() == [])
        #expect(Empty().serializedBytes() == [])
        #expect(try CreateItemRequest(serializedBytes: []) == CreateItemRequest())
        #expect(try Item(serializedBytes: []) == Item())
        #expect(try ProtoJSON.encode(json: "", as: Item.protoName) == [])
        #expect(try ProtoJSON.encode(json: "  \n ", as: Item.protoName) == [])
        #expect(try ProtoJSON.encode(json: "{}", as: Item.protoName) == [])
    }

    @Test func unicodeStringsRoundTrip() throws {
        var item = Item()
        item.name = "Fluffy Bär 🧸"
        item.serialNumber = "日本語 · Ελληνικά · עברית · 👩‍👩‍👧‍👦 · e\u{301}"
        item.photoKeys = ["", "\u{2028}\u{2029}", "tab\tquote\"backslash\\"]
        let decoded = try Item(serializedBytes: item.serializedBytes())
        #expect(decoded == item)
        #expect(decoded.name.utf8.count == "Fluffy Bär 🧸".utf8.count)
    }

    @Test func extremeIntegersRoundTrip() throws {
        var item = Item()
        item.valueInDollars = .min
        item.createdAtMs = .max
        item.updatedAtMs = -1
        #expect(try Item(serializedBytes: item.serializedBytes()) == item)

        var header = RequestHeader()
        header.requestId = .max
        header.timeoutMs = .max
        #expect(try RequestHeader(serializedBytes: header.serializedBytes()) == header)

        var response = ResponseHeader()
        response.code = .min
        response.retryAfterMs = .max
        response.requestId = .max
        #expect(try ResponseHeader(serializedBytes: response.serializedBytes()) == response)

        let json = try ProtoJSON.decode(item.serializedBytes(), as: Item.protoName, options: .init(emitDefaults: false, prettyPrinted: false))
        #expect(json == #"{"valueInDollars":"-9223372036854775808","createdAtMs":"9223372036854775807","updatedAtMs":"-1"}"#)
    }

    @Test func negativeInt32IsTenBytesOnTheWireAndSurvives() throws {
        var move = MoveItemRequest()
        move.fromIndex = -5
        let bytes = move.serializedBytes()
        #expect(bytes == [0x08, 0xFB, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        #expect(try ProtoJSON.encode(json: #"{"fromIndex": -5}"#, as: MoveItemRequest.protoName) == bytes)
        #expect(try MoveItemRequest(serializedBytes: bytes) == move)
    }

    @Test func sixteenMebibyteBytesFieldRoundTripsIntact() throws {
        let size = 16 * 1024 * 1024
        var request = PutImageRequest()
        request.ownerKey = "owner"
        request.kind = .original
        request.data = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var x: UInt32 = 2_463_534_242
            for i in 0..<size {
                x ^= x << 13; x ^= x >> 17; x ^= x << 5
                buffer[i] = UInt8(truncatingIfNeeded: x)
            }
            count = size
        }
        let bytes = request.serializedBytes()
        #expect(bytes.count > size)
        let decoded = try PutImageRequest(serializedBytes: bytes)
        #expect(decoded.data.count == size)
        // memcmp rather than Array ==, which is slow for 16 MiB in a debug build.
        let same = decoded.data.withUnsafeBytes { a in
            request.data.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, size) == 0 }
        }
        #expect(same)
        #expect(decoded.ownerKey == "owner" && decoded.kind == .original)
    }

    @Test func nestedMessagePresenceSurvives() throws {
        let absent = CaptureResponse()
        #expect(absent.serializedBytes() == [])
        #expect(try CaptureResponse(serializedBytes: []).job == nil)

        var present = CaptureResponse()
        present.job = CaptureJob()
        #expect(present.serializedBytes() == [0x0A, 0x00])
        let decoded = try CaptureResponse(serializedBytes: present.serializedBytes())
        #expect(decoded.job == CaptureJob())

        var filled = CaptureResponse()
        var job = CaptureJob()
        job.jobId = "job-1"
        job.state = .running
        job.attempts = 3
        filled.job = job
        #expect(try CaptureResponse(serializedBytes: filled.serializedBytes()) == filled)

        #expect(try ProtoJSON.decode([], as: CaptureResponse.protoName) == "{\n  \"job\": null\n}")
        #expect(try ProtoJSON.encode(json: #"{"job": null}"#, as: CaptureResponse.protoName) == [])
        #expect(try ProtoJSON.encode(json: #"{"job": {}}"#, as: CaptureResponse.protoName) == [0x0A, 0x00])
    }

    @Test func repeatedMessagesKeepTheirOrderAndContent() throws {
        var response = ListItemsResponse()
        response.items = [Item.sample(1), Item.sample(2), Item.sample(3)]
        response.nextPageToken = "page-2"
        response.totalCount = 3
        let decoded = try ListItemsResponse(serializedBytes: response.serializedBytes())
        #expect(decoded == response)
        #expect(decoded.items.map(\.name) == ["Teddy #1 Bär 🧸", "Teddy #2 Bär 🧸", "Teddy #3 Bär 🧸"])

        let json = try ProtoJSON.decode(response.serializedBytes(), as: ListItemsResponse.protoName)
        let back = try ProtoJSON.encode(json: json, as: ListItemsResponse.protoName)
        #expect(try ListItemsResponse(serializedBytes: back) == response)
    }

    @Test func packedRepeatedScalarsMatchProtobufC() throws {
        var job = ThumbnailJob()
        job.imageKey = "k"
        job.sizes = [64, 256, -1]
        let bytes = job.serializedBytes()
        #expect(try ProtoJSON.encode(json: #"{"imageKey": "k", "sizes": [64, 256, -1]}"#, as: ThumbnailJob.protoName) == bytes)
        #expect(try ThumbnailJob(serializedBytes: bytes) == job)
    }
}
