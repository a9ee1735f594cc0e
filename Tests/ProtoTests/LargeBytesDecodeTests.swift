import Testing
@testable import Proto

/// Large top-level `bytes` fields decoded without protobuf-c's copy must decode exactly as
/// protobuf-c decodes them.
@Suite struct LargeBytesDecodeTests {
    static func blob(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    static func varint(_ value: Int) -> [UInt8] {
        var value = UInt64(value), out: [UInt8] = []
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return out + [UInt8(value)]
    }

    static func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(bytes.count) + bytes }

    @Test func everyFieldSurvivesWithTheLargeOneBypassingTheCopy() throws {
        var request = PutImageRequest()
        request.ownerKey = "item-7"
        request.data = Self.blob(300_000, seed: 5)
        request.contentType = "image/jpeg"
        request.kind = .edited
        request.parentKey = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
        request.key = "e4eaaaf2-d142-11e1-b3e4-080027620cdd"
        let encoded = request.serializedBytes()
        #expect(LargeBytes.plan(UnsafeRawBufferPointer(start: nil, count: 0), descriptor: ProtoRegistry.messageDescriptor(PutImageRequest.protoName)!) == nil)
        let plan = encoded.withUnsafeBytes { LargeBytes.plan($0, descriptor: ProtoRegistry.messageDescriptor(PutImageRequest.protoName)!) }
        #expect(plan?.slices.count == 1 && plan?.reduced.count == encoded.count - 300_000 - 4)
        #expect(try PutImageRequest(serializedBytes: encoded) == request)
        // A large string field is not bytes: protobuf-c decodes it as before.
        request.ownerKey = String(repeating: "o", count: 100_000)
        #expect(try PutImageRequest(serializedBytes: request.serializedBytes()) == request)
        // Just under and at the threshold: the same value either way.
        for size in [LargeBytes.threshold - 1, LargeBytes.threshold] {
            request.data = Self.blob(size, seed: 9)
            #expect(try PutImageRequest(serializedBytes: request.serializedBytes()) == request)
        }
    }

    @Test func theLastOccurrenceWinsAsInProtobufC() throws {
        let first = Self.blob(100_000, seed: 1), last = Self.blob(70_000, seed: 2)
        // Fields out of order and repeated, an unknown field between: all legal on the wire.
        let wire = Self.field(2, first) + Self.field(1, Array("owner".utf8)) + Self.field(99, [1, 2, 3])
            + Self.field(2, last) + Self.field(3, Array("image/jpeg".utf8))
        let decoded = try PutImageRequest(serializedBytes: wire)
        #expect(decoded.data.count == last.count && decoded.data == last && decoded.ownerKey == "owner" && decoded.contentType == "image/jpeg")
        // A small later occurrence also wins over a large earlier one (left to protobuf-c).
        let small = try PutImageRequest(serializedBytes: Self.field(2, first) + Self.field(2, [7, 7]))
        #expect(small.data.count == 2 && small.data == [7, 7])
    }

    @Test func malformedLargeInputIsStillRefused() {
        let good = Self.field(2, Self.blob(100_000, seed: 3))
        // Truncated inside the large field; a length past the end after it; a bad tag after it.
        let cases: [[UInt8]] = [
            Array(good.dropLast()),
            good + [0x0A, 0xFF, 0xFF, 0x03],
            good + [0x00, 0x01],
        ]
        for wire in cases {
            #expect(throws: ProtoDecodingError.self) { try PutImageRequest(serializedBytes: wire) }
        }
    }

    @Test func aLargeResponseWithANestedMessageDecodes() throws {
        var info = ImageInfo()
        info.key = "k"
        info.sizeBytes = 200_000
        var response = GetImageResponse()
        response.info = info
        response.data = Self.blob(200_000, seed: 4)
        #expect(try GetImageResponse(serializedBytes: response.serializedBytes()) == response)
    }

    @Test func theNamedPhotoFieldsAreTheFieldsTheirMessagesCarryThePhotoIn() throws {
        let photo = Self.blob(100_000, seed: 3)
        func left<M: ProtoMessage>(_ message: M, _ field: UInt32) throws -> (message: M, field: Range<Int>?, bytes: [UInt8]) {
            let encoded = message.serializedBytes()
            let decoded = try encoded.withUnsafeBytes { try M.decode($0, options: .default, leavingLargeBytesField: field) }
            return (decoded.message, decoded.field, decoded.field.map { Array(encoded[$0]) } ?? [])
        }
        var put = PutImageRequest()
        put.data = photo
        put.contentType = "image/jpeg"
        var append = AppendUploadRequest()
        append.uploadId = "u"
        append.data = photo
        var get = GetImageResponse()
        get.data = photo
        let decodedPut = try left(put, PutImageRequest.dataField)
        #expect(decodedPut.bytes == photo && decodedPut.message.data.isEmpty && decodedPut.message.contentType == "image/jpeg")
        let decodedAppend = try left(append, AppendUploadRequest.dataField)
        #expect(decodedAppend.bytes == photo && decodedAppend.message.data.isEmpty && decodedAppend.message.uploadId == "u")
        let decodedGet = try left(get, GetImageResponse.dataField)
        #expect(decodedGet.bytes == photo && decodedGet.message.data.isEmpty)
        // Any other number leaves nothing in place: the photo is decoded into the message.
        #expect(try left(get, GetImageResponse.dataField + 1).message.data == photo)
    }
}

@Suite struct DecodeInPlaceTests {
    @Test func aBufferDecodesAsItsBytesDo() throws {
        var request = PutImageRequest()
        request.ownerKey = "o"
        request.data = LargeBytesDecodeTests.blob(150_000, seed: 6)
        let encoded = request.serializedBytes()
        let fromBuffer = try encoded.withUnsafeBytes { buffer throws(ProtoDecodingError) in
            try PutImageRequest(serializedBuffer: buffer, options: .default)
        }
        #expect(fromBuffer == request)
        // The same limits apply.
        #expect(throws: ProtoDecodingError.self) {
            try encoded.withUnsafeBytes { buffer throws(ProtoDecodingError) in
                try PutImageRequest(serializedBuffer: buffer, options: DecodingOptions(maxBytes: 1000))
            }
        }
        let empty = try [UInt8]().withUnsafeBytes { buffer throws(ProtoDecodingError) in
            try PutImageRequest(serializedBuffer: buffer, options: .default)
        }
        #expect(empty == PutImageRequest())
    }
}

/// Encoding with large bytes spliced in must write exactly what protobuf-c packs.
@Suite struct LargeBytesEncodeTests {
    /// Encodes `message` into memory it owns and returns a copy (the buffer must outlive the write).
    static func written(_ message: some ProtoMessage) -> [UInt8] {
        var buffer: UnsafeMutableRawBufferPointer?
        let returned = message.serialize { size in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
            buffer = b
            return b
        }
        #expect(returned == nil)
        defer { buffer?.deallocate() }
        return buffer.map { [UInt8]($0) } ?? []
    }

    /// The encoding returned as bytes (the caller declined to provide memory).
    static func returned(_ message: some ProtoMessage) -> [UInt8] {
        message.serialize { _ in nil } ?? []
    }

    /// protobuf-c's own packing of the whole message, nothing spliced.
    static func packed<M: CBridgedMessage>(_ message: M) -> [UInt8] {
        CBridge.encode(message, into: { _ in nil }, spliceLargeBytes: false) ?? []
    }

    @Test func everyMessageWithBytesFieldsWritesProtobufCsBytes() throws {
        let big = LargeBytesDecodeTests.blob(200_000, seed: 8), other = LargeBytesDecodeTests.blob(LargeBytes.threshold, seed: 9)
        var put = PutImageRequest()
        put.ownerKey = "owner"
        put.data = big
        put.contentType = "image/jpeg"
        put.kind = .thumbnail
        put.parentKey = "p"
        put.key = "k"
        var append = AppendUploadRequest()
        append.uploadId = "u"
        append.offset = 1 << 40
        append.data = big
        var info = ImageInfo()
        info.key = "k"
        info.sizeBytes = 200_000
        var rendition = GetRenditionResponse()
        rendition.info = info
        rendition.data = big
        var job = Job()
        job.jobId = "j"
        job.payload = big
        job.attempts = 3
        job.lastError = "e"
        job.result = other  // two deferred fields, one at the threshold
        var lease = LeaseResponse()
        lease.jobs = [job, job]  // nested: not deferred, copied by protobuf-c as before
        var smallJob = job
        smallJob.payload = [1, 2]
        smallJob.result = []
        var onlyData = PutImageRequest()
        onlyData.data = big
        let cases: [any ProtoMessage] = [put, append, rendition, job, lease, smallJob, onlyData, PutImageRequest()]
        for message in cases {
            let bridged = message as! any CBridgedMessage
            let expected = Self.packed(bridged)
            let got = Self.written(message), returned = Self.returned(message)
            #expect(got.count == expected.count && got == expected, "\(type(of: message))")
            #expect(returned.count == expected.count && returned == expected, "\(type(of: message)) as bytes")
        }
        #expect(try Job(serializedBytes: Self.written(job)) == job)
    }
}
