import Foundation
@testable import Proto
import Testing

/// Bodies whose protobuf-c unpack would cost many times their size are refused before it, by a
/// limit named in the error; what is accepted unpacks in an arena that grows in chunks.
struct DecodeBudgetTests {
    /// `count` copies of `field`'s bytes: 4 MiB of three-byte fields is 1,398,101 fields.
    static func repeated(_ field: [UInt8], bytes: Int) -> [UInt8] {
        [UInt8]((0..<bytes / field.count).flatMap { _ in field })
    }

    /// Field 111 (undeclared in every message of proto/), varint 0: three bytes.
    static let unknownField: [UInt8] = [0xF8, 0x06, 0x00]
    /// ReorderPhotosRequest.image_keys (field 2) = "".
    static let emptyImageKey: [UInt8] = [0x12, 0x00]

    /// The reason of the `.overLimit` error `body` threw, nil when it threw nothing.
    func overLimitReason(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            guard let error = error as? ProtoDecodingError, case let .overLimit(_, reason) = error else {
                return "not overLimit: \(error)"
            }
            return reason
        }
    }

    @Test func fourMebibytesOfUnknownFieldsAreRefusedNamingTheLimit() throws {
        let body = Self.repeated(Self.unknownField, bytes: 4 << 20)
        let reason = overLimitReason { _ = try ReorderPhotosRequest(serializedBytes: body) }
        #expect(reason == "homepwner.v1.ReorderPhotosRequest has more than 1024 unknown fields (field 111 of homepwner.v1.ReorderPhotosRequest is one); at most 1024 are accepted")
        // At the limit they are skipped as before.
        let atLimit = Self.repeated(Self.unknownField, bytes: 3 * 1024) + [0x0A, 0x01, 0x6B]
        #expect(try ReorderPhotosRequest(serializedBytes: atLimit).itemKey == "k")
        // Unknown fields of nested messages count too.
        var item = Item()
        item.key = "k"
        var list = ListItemsResponse()
        list.items = [item, item]
        var nested = list.serializedBytes()
        let inner = item.serializedBytes() + Self.repeated(Self.unknownField, bytes: 3 * 1100)
        nested += [0x0A] + varint(inner.count) + inner
        #expect(overLimitReason { _ = try ListItemsResponse(serializedBytes: nested) }?.contains("field 111 of homepwner.v1.Item") == true)
    }

    @Test func aNulInATextFieldIsRefusedRatherThanCutShort() throws {
        // CreateItemRequest.name (field 1) = "a\0b": protobuf-c keeps strings NUL-terminated.
        let name: [UInt8] = [0x0A, 0x03, 0x61, 0x00, 0x62]
        #expect(throws: ProtoDecodingError.nulInText(type: "homepwner.v1.CreateItemRequest", field: "homepwner.v1.CreateItemRequest.name")) {
            try CreateItemRequest(serializedBytes: name)
        }
        // In a nested message, named by its path: ListItemsResponse.items[].name.
        let item: [UInt8] = [0x12, 0x02, 0x00, 0x41]
        #expect(throws: ProtoDecodingError.nulInText(type: "homepwner.v1.ListItemsResponse", field: "homepwner.v1.ListItemsResponse.items.name")) {
            try ListItemsResponse(serializedBytes: [0x0A, UInt8(item.count)] + item)
        }
        #expect(ProtoDecodingError.nulInText(type: "T", field: "T.notes").description == "T.notes holds a NUL character (U+0000), which no text field accepts")
        // Bytes fields carry any byte.
        let data: [UInt8] = [0x12, 0x03, 0x00, 0xFF, 0x00]
        #expect(try PutImageRequest(serializedBytes: data).data == [0x00, 0xFF, 0x00])
    }

    @Test func fourMebibytesOfEmptyRepeatedStringsAreRefusedNamingTheField() throws {
        let body = Self.repeated(Self.emptyImageKey, bytes: 4 << 20)
        let reason = overLimitReason { _ = try ReorderPhotosRequest(serializedBytes: body) }
        #expect(reason == "homepwner.v1.ReorderPhotosRequest.image_keys has more than 65536 values; at most 65536 are accepted in one message")
        // The same through the JSON printer, which unpacks with protobuf-c too.
        let error = try #require(throws: ProtoJSONError.self) { try ProtoJSON.decode(body, as: ReorderPhotosRequest.protoName) }
        #expect(error.kind == .overLimit)
        #expect(error.message == reason)
    }

    @Test func aRepeatedFieldAtTheLimitOfValuesDecodes() throws {
        var request = ReorderPhotosRequest()
        request.imageKeys = (0..<65_536).map { String(format: "7f9c24e8-3b1a-4c2d-9e8f-%012x", $0) }
        let decoded = try ReorderPhotosRequest(serializedBytes: request.serializedBytes())
        #expect(decoded == request)
        request.imageKeys.append("one more")
        #expect(overLimitReason { _ = try ReorderPhotosRequest(serializedBytes: request.serializedBytes()) }?
            .hasPrefix("homepwner.v1.ReorderPhotosRequest.image_keys has more than 65536 values") == true)
    }

    @Test func smallFieldsThatWouldCostMoreThanTheMemoryBudgetAreRefused() throws {
        // 40,000 empty strings: 80 KB, which protobuf-c unpacks into about 2.7 MB (scan slabs, an
        // array slot and a string each), over 1 MiB + 4 per input byte.
        let body = Self.repeated(Self.emptyImageKey, bytes: 80_000)
        let reason = try #require(overLimitReason { _ = try ReorderPhotosRequest(serializedBytes: body) })
        #expect(reason.hasPrefix("homepwner.v1.ReorderPhotosRequest (80000 bytes) would take more than 1368576 bytes of memory to decode (1048576 + 4 per input byte), reached in homepwner.v1.ReorderPhotosRequest.image_keys"))
        // A larger budget admits them.
        let generous = DecodingOptions(memoryBudgetPerInputByte: 64)
        #expect(try ReorderPhotosRequest(serializedBytes: body, options: generous).imageKeys.count == 40_000)
    }

    @Test func nestingDeeperThanTheLimitIsRefusedNamingWhere() throws {
        var list = ListItemsResponse()
        list.items = [Item()]
        list.items[0].name = "deep"
        let bytes = list.serializedBytes()
        let reason = overLimitReason { _ = try ListItemsResponse(serializedBytes: bytes, options: DecodingOptions(maxDepth: 1)) }
        #expect(reason == "homepwner.v1.ListItemsResponse nests messages more than 1 deep (at homepwner.v1.ListItemsResponse.items); at most 1 levels are accepted")
        #expect(try ListItemsResponse(serializedBytes: bytes, options: DecodingOptions(maxDepth: 2)) == list)
    }

    @Test func malformedInputIsStillReportedAsMalformed() throws {
        // The scan leaves what it cannot read to protobuf-c: a truncated length, a group.
        for bytes: [UInt8] in [[0x12, 0x05, 0x41], [0x0B, 0x0C], [0x00, 0x01]] {
            #expect(throws: ProtoDecodingError.malformed(type: Item.protoName, size: bytes.count)) {
                try Item(serializedBytes: bytes)
            }
        }
    }

    @Test func theArenaGrowsInChunksAndStopsAtItsBudget() throws {
        // 60,000 keys: protobuf-c asks for about 60,000 pieces (a string each, scan slabs, the
        // array); a chunk per piece past the first kilobyte was 60,000 system allocations.
        var request = ReorderPhotosRequest()
        request.imageKeys = (0..<60_000).map { String(format: "7f9c24e8-3b1a-4c2d-9e8f-%012x", $0) }
        let bytes = request.serializedBytes()
        let descriptor = ReorderPhotosRequest.cDescriptor
        let arena = Arena(budget: DecodingOptions.default.memoryBudget(forInputBytes: bytes.count))
        let decoded = bytes.withUnsafeBytes { input in
            CBridge.unpack(ReorderPhotosRequest.self, input, leaving: nil, descriptor: descriptor, arena: arena)
        }
        #expect(decoded?.message == request)
        #expect(arena.pieces > 60_000)
        #expect(arena.systemAllocations < 40, "\(arena.systemAllocations) system allocations for \(arena.pieces) pieces")
        // Strings, scan slabs and the array: about 2.2 bytes per input byte, within the budget's 4.
        #expect(arena.allocatedBytes < 3 * bytes.count)

        // Past its budget the arena hands out nothing more and protobuf-c fails cleanly.
        let small = Arena(budget: 64 * 1024)
        let refused = bytes.withUnsafeBytes { input in
            CBridge.unpack(ReorderPhotosRequest.self, input, leaving: nil, descriptor: descriptor, arena: small)
        }
        #expect(refused == nil)
        #expect(small.exhausted)
        #expect(small.allocatedBytes <= 64 * 1024)
    }

    private func varint(_ value: Int) -> [UInt8] {
        var value = UInt64(value)
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }
}
