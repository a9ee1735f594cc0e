import Proto
import Testing

/// What protobuf-c 1.4.1's unpack does with unusual input, pinned so an upgrade that changes it is noticed.
struct ProtobufCBehaviourTests {
    func json(_ bytes: [UInt8], _ name: String) throws -> String {
        try ProtoJSON.decode(bytes, as: name, options: .init(emitDefaults: false, prettyPrinted: false))
    }

    @Test func unknownFieldsAreSkipped() throws {
        // Field 99 (varint), then Item.name = "A".
        let bytes: [UInt8] = [0x98, 0x06, 0x01, 0x12, 0x01, 0x41]
        #expect(try Item(serializedBytes: bytes).name == "A")
        #expect(try json(bytes, Item.protoName) == #"{"name":"A"}"#)
        // protobuf-c keeps them, but the Swift types drop them: re-encoding loses field 99.
        #expect(try Item(serializedBytes: bytes).serializedBytes() == [0x12, 0x01, 0x41])
    }

    @Test func packedAndUnpackedRepeatedScalarsAreBothAccepted() throws {
        let packed: [UInt8] = [0x12, 0x02, 0x01, 0x02]
        let unpacked: [UInt8] = [0x10, 0x01, 0x10, 0x02]
        #expect(try ThumbnailJob(serializedBytes: packed).sizes == [1, 2])
        #expect(try ThumbnailJob(serializedBytes: unpacked).sizes == [1, 2])
        #expect(try ThumbnailJob(serializedBytes: packed + [0x10, 0x03]).sizes == [1, 2, 3])
        // protobuf-c writes proto3 repeated scalars packed.
        #expect(try ThumbnailJob(serializedBytes: unpacked).serializedBytes() == packed)
    }

    @Test func invalidUTF8InStringsIsAcceptedAndRepairedBySwift() throws {
        let bytes: [UInt8] = [0x12, 0x02, 0xFF, 0xFE]
        #expect(try Item(serializedBytes: bytes).name == "\u{FFFD}\u{FFFD}")
        #expect(try json(bytes, Item.protoName) == "{\"name\":\"\u{FFFD}\u{FFFD}\"}")
    }

    @Test func stringsWithANULByteAreRefusedSinceProtobufCWouldCutThemThere() throws {
        // protobuf-c keeps strings NUL-terminated: "a\0b" would arrive as "a". The scan before
        // unpacking refuses it instead (WireScan).
        #expect(throws: ProtoDecodingError.nulInText(type: "homepwner.v1.Item", field: "homepwner.v1.Item.name")) {
            try Item(serializedBytes: [0x12, 0x03, 0x61, 0x00, 0x62])
        }
        // Sending, protobuf-c takes the text up to the NUL: a Swift client's own strings are cut.
        var item = Item()
        item.name = "a\u{0}b"
        #expect(item.serializedBytes() == [0x12, 0x01, 0x61])
    }

    @Test func wrongWireTypeForAKnownFieldIsMalformed() {
        #expect(throws: ProtoDecodingError.self) { try Item(serializedBytes: [0x10, 0x05]) }  // string as varint
        #expect(throws: ProtoDecodingError.self) { try Item(serializedBytes: [0x22, 0x01, 0x05]) }  // int64 as bytes
        #expect(throws: ProtoDecodingError.self) { try Item(serializedBytes: [0x00, 0x01]) }  // field number 0
        #expect(throws: ProtoDecodingError.self) { try Item(serializedBytes: [0x0B, 0x0C]) }  // groups
        #expect(throws: ProtoDecodingError.self) {
            try MoveItemRequest(serializedBytes: [0x08] + [UInt8](repeating: 0xFF, count: 10) + [0x01])  // 11-byte varint
        }
    }

    @Test func lastScalarWinsAndRepeatedMessagesFieldsMerge() throws {
        #expect(try Item(serializedBytes: [0x20, 0x01, 0x20, 0x02]).valueInDollars == 2)
        // CaptureResponse.job given twice: {job_id: "a"} then {attempts: 5} → merged.
        let merged = try CaptureResponse(serializedBytes: [0x0A, 0x03, 0x0A, 0x01, 0x61, 0x0A, 0x02, 0x38, 0x05])
        #expect(merged.job?.jobId == "a" && merged.job?.attempts == 5)
    }

    @Test func undeclaredEnumNumbersAndOverlongInt32AreKept() throws {
        #expect(try PutImageRequest(serializedBytes: [0x20, 0x07]).kind.rawValue == 7)
        // int32 written as a 64-bit varint of -1 (as protobuf-c writes it): the low 32 bits count.
        #expect(try MoveItemRequest(serializedBytes: [0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x01]).fromIndex == -1)
        // A bool varint of 2 reads as true.
        #expect(try CreateItemRequest(serializedBytes: [0x20, 0x02]).random)
    }
}
